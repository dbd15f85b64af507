//! The command line's text for disk benchmark runs: units in every figure.

use std::fmt::Write;

use super::history::{Comparison, DirectionComparison, DiskRun, Ratio};

/// "3 min ago", "2 h ago", "4 days ago".
fn age(seconds: i64) -> String {
    match seconds.max(0) {
        s if s < 120 => format!("{s} s ago"),
        s if s < 7200 => format!("{} min ago", s / 60),
        s if s < 172_800 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

pub fn run(run: &DiskRun) -> String {
    let mut out = String::new();
    let what = run.preset.as_deref().unwrap_or("job file");
    let _ = writeln!(
        out,
        "#{} {} on {} ({}): {}",
        run.id,
        what,
        run.target,
        run.disk,
        run.status.as_str()
    );
    if let Some(error) = &run.error {
        let _ = writeln!(out, "  {error}");
    }
    if let Some(p) = &run.progress {
        let _ = writeln!(
            out,
            "  job {}/{} {} ({:.0} % of the run)",
            p.job_index,
            p.jobs,
            p.job,
            p.fraction * 100.0
        );
    }
    for r in &run.results {
        let direct = if r.direct { "" } else { ", buffered" };
        let _ = writeln!(out, "{} ({:.1} s, {}{direct})", r.job, r.seconds, r.engine);
        for (name, d) in [("read", &r.read), ("write", &r.write)] {
            if let Some(d) = d {
                let _ = writeln!(
                    out,
                    "  {name}: {:.0} IOPS, {:.1} MiB/s ({:.1} MB/s), latency us mean {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1}",
                    d.iops,
                    d.bw_mib_per_s,
                    d.bw_mb_per_s,
                    d.lat_us.mean,
                    d.lat_us.p50,
                    d.lat_us.p99,
                    d.lat_us.p99_9
                );
            }
        }
    }
    if let Some(summary) = &run.summary {
        let _ = write!(out, "\n{summary}");
    }
    let c = &run.context;
    let mut context = Vec::new();
    if let Some(fs) = &c.filesystem {
        context.push(format!(
            "{} at {} ({})",
            fs.fs_type,
            fs.mountpoint,
            fs.mount_options.join(",")
        ));
    }
    if let Some(d) = &c.device {
        let usb = d
            .usb_speed_mbps
            .map(|s| {
                format!(
                    ", USB {s} Mbit/s{}",
                    if d.usb_degraded { " (degraded)" } else { "" }
                )
            })
            .unwrap_or_default();
        context.push(format!(
            "{} {}{usb}",
            d.transport,
            d.model.as_deref().unwrap_or(&d.name)
        ));
    }
    for cpu in &c.cpu {
        context.push(format!(
            "{} {} {}-{} MHz",
            cpu.policy,
            cpu.governors.join("+"),
            cpu.min_khz.unwrap_or(0) / 1000,
            cpu.max_khz.unwrap_or(0) / 1000
        ));
    }
    if let Some(hottest) = c
        .temperatures
        .iter()
        .filter_map(|t| Some((t, t.max_c?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
    {
        let (t, max) = hottest;
        context.push(format!(
            "{} max {max:.1} °C (before {:.1}, after {:.1})",
            t.kind.as_deref().unwrap_or(&t.zone),
            t.before_c.unwrap_or(f64::NAN),
            t.after_c.unwrap_or(f64::NAN)
        ));
    }
    if c.throttled {
        context.push("THROTTLED".into());
    }
    if let Some(kernel) = &c.kernel {
        context.push(format!("kernel {kernel}"));
    }
    if !context.is_empty() {
        let _ = writeln!(out, "context: {}", context.join("; "));
    }
    if let Some(b) = &run.baseline {
        let runs: Vec<String> = b.runs.iter().map(|id| format!("#{id}")).collect();
        let _ = writeln!(
            out,
            "baseline (median of {}): {}",
            runs.join(", "),
            if b.regression {
                format!("REGRESSION beyond {} %", b.threshold_percent)
            } else {
                "no regression".into()
            }
        );
        for change in &b.changes {
            let _ = writeln!(
                out,
                "  {} {}: {:.0} IOPS vs {:.0} ({:.2}x)",
                change.job, change.direction, change.iops, change.baseline_iops, change.ratio
            );
        }
    }
    out
}

pub fn runs(runs: &[DiskRun], now: i64) -> String {
    let mut out = String::new();
    for r in runs {
        let headline = r
            .results
            .first()
            .and_then(|j| {
                let d = j.read.as_ref().or(j.write.as_ref())?;
                Some(format!(
                    "{} {:.0} IOPS {:.1} MiB/s",
                    j.job, d.iops, d.bw_mib_per_s
                ))
            })
            .unwrap_or_default();
        let regression = if r.baseline.as_ref().is_some_and(|b| b.regression) {
            " REGRESSION"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "#{:<4} {:<12} {:<11} {:<8} {} {}  {headline}{regression}",
            r.id,
            age(now - r.started_at),
            r.status.as_str(),
            r.preset.as_deref().unwrap_or("jobfile"),
            r.disk,
            r.target,
        );
    }
    out
}

fn ratio(r: &Ratio) -> String {
    r.ratio.map_or_else(|| "-".into(), |x| format!("{x:.2}x"))
}

fn direction(out: &mut String, name: &str, d: &DirectionComparison) {
    let _ = writeln!(
        out,
        "  {name}: {:.0} -> {:.0} IOPS ({}), {:.1} -> {:.1} MiB/s ({}), p50 {:.1} -> {:.1} us ({}), p99 {:.1} -> {:.1} us ({})",
        d.iops.a,
        d.iops.b,
        ratio(&d.iops),
        d.bw_bytes_per_s.a / 1_048_576.0,
        d.bw_bytes_per_s.b / 1_048_576.0,
        ratio(&d.bw_bytes_per_s),
        d.lat_us_p50.a,
        d.lat_us_p50.b,
        ratio(&d.lat_us_p50),
        d.lat_us_p99.a,
        d.lat_us_p99.b,
        ratio(&d.lat_us_p99)
    );
}

pub fn comparison(c: &Comparison) -> String {
    let mut out = format!("#{} -> #{} (ratios are B / A)\n", c.a, c.b);
    for job in &c.jobs {
        let _ = writeln!(out, "{}", job.job);
        if let Some(d) = &job.read {
            direction(&mut out, "read", d);
        }
        if let Some(d) = &job.write {
            direction(&mut out, "write", d);
        }
    }
    if c.jobs.is_empty() {
        out.push_str("no job in common\n");
    }
    for change in &c.context_changes {
        let _ = writeln!(out, "changed: {change}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_naturally() {
        assert_eq!(age(5), "5 s ago");
        assert_eq!(age(600), "10 min ago");
        assert_eq!(age(3 * 3600), "3 h ago");
        assert_eq!(age(10 * 86_400), "10 days ago");
        assert_eq!(age(-3), "0 s ago");
    }

    #[test]
    fn a_comparison_prints_ratios_and_context() {
        let c = Comparison {
            a: 1,
            b: 2,
            jobs: vec![super::super::history::JobComparison {
                job: "randread".into(),
                read: Some(DirectionComparison {
                    iops: Ratio {
                        a: 1000.0,
                        b: 500.0,
                        ratio: Some(0.5),
                    },
                    bw_bytes_per_s: Ratio {
                        a: 4096e3,
                        b: 2048e3,
                        ratio: Some(0.5),
                    },
                    lat_us_p50: Ratio {
                        a: 100.0,
                        b: 200.0,
                        ratio: Some(2.0),
                    },
                    lat_us_p99: Ratio {
                        a: 0.0,
                        b: 300.0,
                        ratio: None,
                    },
                }),
                write: None,
            }],
            context_changes: vec!["USB link: 5000 Mbit/s -> 480 Mbit/s".into()],
        };
        let text = comparison(&c);
        assert!(text.contains("read: 1000 -> 500 IOPS (0.50x)"), "{text}");
        assert!(text.contains("p99 0.0 -> 300.0 us (-)"), "{text}");
        assert!(
            text.contains("changed: USB link: 5000 Mbit/s -> 480 Mbit/s"),
            "{text}"
        );
    }
}
