//! A run as it is stored and shown, and the pure comparisons over runs:
//! a baseline (the median of the last runs of the same preset on the same
//! disk) with the regression it may show, and two runs side by side.

use serde::{Deserialize, Serialize};

use super::context::RunContext;
use super::engine::{Direction, JobResult};
use super::presets::SbcScore;

/// Runs of the same disk and preset the baseline is the median of.
pub const BASELINE_RUNS: u32 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Done,
    Failed,
    Cancelled,
    /// Stopped because a thermal zone neared a trip point.
    Aborted,
    /// The process died mid-run; its files were removed at the next start.
    Interrupted,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::Aborted => "aborted",
            Status::Interrupted => "interrupted",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskRun {
    pub id: i64,
    pub status: Status,
    /// The preset's name, or None for a job file.
    pub preset: Option<String>,
    /// The job file's text when the run was not a preset.
    pub jobfile: Option<String>,
    /// The directory, or the raw device.
    pub target: String,
    pub raw_device: bool,
    /// What the disk is known by across reboots and renames: its serial
    /// (or WWN), a loop device's backing file, else the target.
    pub disk: String,
    /// Unix seconds.
    pub started_at: i64,
    pub finished_at: Option<i64>,
    /// While running.
    pub progress: Option<Progress>,
    /// Why it failed, was aborted or cancelled.
    pub error: Option<String>,
    pub results: Vec<JobResult>,
    /// dbench's four lines or the SBC score's, for the presets that have one.
    pub summary: Option<String>,
    pub sbc: Option<SbcScore>,
    pub context: RunContext,
    /// Compared with the last runs of the same preset on the same disk.
    pub baseline: Option<Baseline>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// 1-based.
    pub job_index: u32,
    pub jobs: u32,
    pub job: String,
    /// Of the whole run, 0 to 1.
    pub fraction: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// The runs whose median is the baseline.
    pub runs: Vec<i64>,
    pub threshold_percent: u8,
    pub changes: Vec<Change>,
    /// A figure fell more than `threshold_percent` below the median.
    pub regression: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub job: String,
    pub direction: String,
    pub iops: f64,
    pub baseline_iops: f64,
    /// iops / baseline_iops.
    pub ratio: f64,
}

fn directions(r: &JobResult) -> [(&'static str, Option<&Direction>); 2] {
    [("read", r.read.as_ref()), ("write", r.write.as_ref())]
}

/// The middle value (the mean of the middle two for an even count).
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// Compares `results` with the median of `previous` (completed runs of the
/// same preset on the same disk) job by job and direction by direction.
/// None without previous runs.
pub fn baseline(
    results: &[JobResult],
    previous: &[DiskRun],
    threshold_percent: u8,
) -> Option<Baseline> {
    if previous.is_empty() {
        return None;
    }
    let floor = 1.0 - f64::from(threshold_percent) / 100.0;
    let mut changes = Vec::new();
    for r in results {
        for (direction, now) in directions(r) {
            let Some(now) = now else { continue };
            let before: Vec<f64> = previous
                .iter()
                .flat_map(|run| run.results.iter().filter(|p| p.job == r.job))
                .filter_map(|p| {
                    directions(p)
                        .into_iter()
                        .find(|(d, _)| *d == direction)?
                        .1
                        .map(|d| d.iops)
                })
                .collect();
            let Some(baseline_iops) = median(before).filter(|m| *m > 0.0) else {
                continue;
            };
            changes.push(Change {
                job: r.job.clone(),
                direction: direction.to_owned(),
                iops: now.iops,
                baseline_iops,
                ratio: now.iops / baseline_iops,
            });
        }
    }
    let regression = changes.iter().any(|c| c.ratio < floor);
    Some(Baseline {
        runs: previous.iter().map(|r| r.id).collect(),
        threshold_percent,
        changes,
        regression,
    })
}

/// The event text for a regression: the worst change, and how many fell.
pub fn regression_message(run: &DiskRun) -> Option<String> {
    let b = run.baseline.as_ref().filter(|b| b.regression)?;
    let floor = 1.0 - f64::from(b.threshold_percent) / 100.0;
    let fallen: Vec<&Change> = b.changes.iter().filter(|c| c.ratio < floor).collect();
    let worst = fallen.iter().min_by(|a, b| a.ratio.total_cmp(&b.ratio))?;
    let runs: Vec<String> = b.runs.iter().map(|id| format!("#{id}")).collect();
    Some(format!(
        "disk benchmark #{} ({} on {}): {} {} {:.0} IOPS is {:.0} % below the median {:.0} IOPS of runs {}{}",
        run.id,
        run.preset.as_deref().unwrap_or("job file"),
        run.disk,
        worst.job,
        worst.direction,
        worst.iops,
        (1.0 - worst.ratio) * 100.0,
        worst.baseline_iops,
        runs.join(", "),
        if fallen.len() > 1 {
            format!(" ({} figures fell)", fallen.len())
        } else {
            String::new()
        }
    ))
}

/// One figure of two runs, and b / a.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ratio {
    pub a: f64,
    pub b: f64,
    pub ratio: Option<f64>,
}

impl Ratio {
    fn new(a: f64, b: f64) -> Self {
        Ratio {
            a,
            b,
            ratio: (a > 0.0).then(|| b / a),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirectionComparison {
    pub iops: Ratio,
    pub bw_bytes_per_s: Ratio,
    pub lat_us_p50: Ratio,
    pub lat_us_p99: Ratio,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobComparison {
    pub job: String,
    pub read: Option<DirectionComparison>,
    pub write: Option<DirectionComparison>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a: i64,
    pub b: i64,
    /// Jobs both runs have, in a's order.
    pub jobs: Vec<JobComparison>,
    /// What differed around the figures: "kernel: 6.1 -> 6.6".
    pub context_changes: Vec<String>,
}

fn compare_direction(a: Option<&Direction>, b: Option<&Direction>) -> Option<DirectionComparison> {
    let (a, b) = (a?, b?);
    Some(DirectionComparison {
        iops: Ratio::new(a.iops, b.iops),
        bw_bytes_per_s: Ratio::new(a.bw_bytes_per_s, b.bw_bytes_per_s),
        lat_us_p50: Ratio::new(a.lat_us.p50, b.lat_us.p50),
        lat_us_p99: Ratio::new(a.lat_us.p99, b.lat_us.p99),
    })
}

pub fn compare(a: &DiskRun, b: &DiskRun) -> Comparison {
    let jobs = a
        .results
        .iter()
        .filter_map(|ra| {
            let rb = b.results.iter().find(|rb| rb.job == ra.job)?;
            Some(JobComparison {
                job: ra.job.clone(),
                read: compare_direction(ra.read.as_ref(), rb.read.as_ref()),
                write: compare_direction(ra.write.as_ref(), rb.write.as_ref()),
            })
        })
        .collect();
    Comparison {
        a: a.id,
        b: b.id,
        jobs,
        context_changes: context_changes(a, b),
    }
}

fn context_changes(a: &DiskRun, b: &DiskRun) -> Vec<String> {
    let mut changes = Vec::new();
    let mut differ = |what: &str, x: String, y: String| {
        if x != y {
            changes.push(format!("{what}: {x} -> {y}"));
        }
    };
    let shown = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    let (ca, cb) = (&a.context, &b.context);
    differ("disk", a.disk.clone(), b.disk.clone());
    differ("preset", shown(a.preset.clone()), shown(b.preset.clone()));
    differ("kernel", shown(ca.kernel.clone()), shown(cb.kernel.clone()));
    let usb = |c: &RunContext| {
        shown(
            c.device
                .as_ref()
                .and_then(|d| d.usb_speed_mbps)
                .map(|s| format!("{s} Mbit/s")),
        )
    };
    differ("USB link", usb(ca), usb(cb));
    let fs = |c: &RunContext| {
        shown(
            c.filesystem
                .as_ref()
                .map(|f| format!("{} ({})", f.fs_type, f.mount_options.join(","))),
        )
    };
    differ("filesystem", fs(ca), fs(cb));
    for cluster in &ca.cpu {
        if let Some(other) = cb.cpu.iter().find(|c| c.policy == cluster.policy) {
            differ(
                &format!("{} governor", cluster.policy),
                cluster.governors.join("+"),
                other.governors.join("+"),
            );
        }
    }
    differ(
        "throttled",
        ca.throttled.to_string(),
        cb.throttled.to_string(),
    );
    let engines = |r: &DiskRun| {
        let mut e: Vec<String> = r.results.iter().map(|j| j.engine.clone()).collect();
        e.dedup();
        e.join(",")
    };
    differ("engine", engines(a), engines(b));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::disk::engine::Latency;

    fn direction(iops: f64) -> Direction {
        Direction {
            io_bytes: 0,
            ios: 0,
            iops,
            bw_bytes_per_s: iops * 4096.0,
            bw_mib_per_s: iops * 4096.0 / 1_048_576.0,
            bw_mb_per_s: iops * 4096.0 / 1e6,
            lat_us: Latency {
                mean: 1e6 / iops,
                p50: 1e6 / iops,
                p90: 1e6 / iops,
                p99: 2e6 / iops,
                p99_9: 3e6 / iops,
            },
        }
    }

    fn run(id: i64, read_iops: f64, write_iops: f64) -> DiskRun {
        DiskRun {
            id,
            status: Status::Done,
            preset: Some("quick".into()),
            jobfile: None,
            target: "/srv/data".into(),
            raw_device: false,
            disk: "WD-123".into(),
            started_at: 0,
            finished_at: Some(1),
            progress: None,
            error: None,
            results: vec![JobResult {
                job: "randrw".into(),
                engine: "libaio".into(),
                direct: true,
                seconds: 6.0,
                read: Some(direction(read_iops)),
                write: Some(direction(write_iops)),
            }],
            summary: None,
            sbc: None,
            context: RunContext::default(),
            baseline: None,
        }
    }

    #[test]
    fn the_baseline_is_the_median_and_a_drop_beyond_the_threshold_regresses() {
        let previous = [
            run(1, 1000.0, 500.0),
            run(2, 1200.0, 520.0),
            run(3, 5000.0, 480.0),
        ];
        // Within 20 %: 850 / 1200 = 0.71 for read is a regression; write
        // 450 / 500 = 0.9 is not.
        let b = baseline(&run(4, 850.0, 450.0).results, &previous, 20).unwrap();
        assert_eq!(b.runs, [1, 2, 3]);
        let read = b.changes.iter().find(|c| c.direction == "read").unwrap();
        assert_eq!(read.baseline_iops, 1200.0, "the median, not the mean");
        assert!((read.ratio - 850.0 / 1200.0).abs() < 1e-9);
        assert!(b.regression);
        let mut slow = run(4, 850.0, 450.0);
        slow.baseline = Some(b);
        let message = regression_message(&slow).unwrap();
        assert!(
            message.contains(
                "randrw read 850 IOPS is 29 % below the median 1200 IOPS of runs #1, #2, #3"
            ),
            "{message}"
        );
        // The same figures with a 30 % threshold are no regression.
        let b = baseline(&run(4, 850.0, 450.0).results, &previous, 30).unwrap();
        assert!(!b.regression);
        assert!(baseline(&run(4, 1.0, 1.0).results, &[], 20).is_none());
        // An even count: the mean of the middle two.
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn two_runs_compare_figure_by_figure_with_their_context() {
        let mut a = run(1, 1000.0, 500.0);
        let mut b = run(2, 1500.0, 250.0);
        b.context.kernel = Some("6.6.0".into());
        a.context.kernel = Some("6.1.0".into());
        let c = compare(&a, &b);
        let job = &c.jobs[0];
        assert_eq!(job.read.as_ref().unwrap().iops.ratio, Some(1.5));
        assert_eq!(job.write.as_ref().unwrap().iops.ratio, Some(0.5));
        // Latency doubles when IOPS halve at a fixed depth.
        assert!((job.write.as_ref().unwrap().lat_us_p50.ratio.unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(c.context_changes, ["kernel: 6.1.0 -> 6.6.0"]);
    }
}
