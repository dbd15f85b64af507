//! The human-readable `nasd tune show`.

use std::fmt::Write;

use super::TuningState;

fn mhz(khz: Option<u64>) -> String {
    khz.map_or_else(|| "?".to_owned(), |k| (k / 1000).to_string())
}

pub fn render(state: &TuningState) -> String {
    let mut out = String::new();
    if state.clusters.is_empty() {
        out.push_str("cpufreq: none (this machine has no CPU frequency scaling)\n");
    }
    for c in &state.clusters {
        let k = &c.cluster;
        let _ = writeln!(
            out,
            "{} (cpus {}, {}): {} {}-{} MHz of {}-{}, now {} MHz",
            k.policy,
            super::cpu_list_string(&k.cpus),
            k.core_type.as_deref().unwrap_or("unknown cores"),
            k.governor.as_deref().unwrap_or("?"),
            mhz(k.min_khz),
            mhz(k.max_khz),
            mhz(k.hw_min_khz),
            mhz(k.hw_max_khz),
            mhz(k.cur_khz),
        );
        if !c.tunables.is_empty() {
            let pairs: Vec<String> = c.tunables.iter().map(|(n, v)| format!("{n}={v}")).collect();
            let _ = writeln!(
                out,
                "  tunables ({}): {}",
                c.tunables_scope.unwrap_or("?"),
                pairs.join(" ")
            );
        }
        let total: f64 = c.time_in_state.iter().map(|t| t.secs).sum();
        if total > 0.0 {
            let mut busiest = c.time_in_state.clone();
            busiest.sort_by(|a, b| b.secs.total_cmp(&a.secs));
            let top: Vec<String> = busiest
                .iter()
                .take(3)
                .map(|t| format!("{} MHz {:.0}%", t.khz / 1000, 100.0 * t.secs / total))
                .collect();
            let _ = writeln!(out, "  time in state: {}", top.join(", "));
        }
    }
    for d in &state.disks {
        let _ = writeln!(
            out,
            "disk {}: read-ahead {} KiB, scheduler {} (of {})",
            d.disk,
            d.read_ahead_kb
                .map_or_else(|| "?".to_owned(), |k| k.to_string()),
            d.scheduler.as_deref().unwrap_or("?"),
            d.available_schedulers.join(" ")
        );
    }
    for i in state.irqs.iter().filter(|i| i.io) {
        let _ = writeln!(
            out,
            "irq {} {}: cpus {}",
            i.number,
            i.name,
            i.affinity.as_deref().unwrap_or("?")
        );
    }
    for z in &state.thermal {
        let passive = z.trips.iter().find(|t| t.kind == "passive");
        let _ = writeln!(
            out,
            "thermal {} {}: {} °C{}",
            z.zone,
            z.kind.as_deref().unwrap_or("?"),
            z.celsius
                .map_or_else(|| "?".to_owned(), |t| format!("{t:.1}")),
            passive.map_or_else(String::new, |t| format!(
                ", throttles at {:.1} °C",
                t.celsius
            )),
        );
    }
    for warning in super::thermal_warnings(&state.thermal) {
        let _ = writeln!(out, "WARNING: {warning}");
    }
    let kept = state
        .desired
        .preset
        .as_deref()
        .unwrap_or(if state.desired.clusters.is_empty() {
            "nothing (the kernel's own settings)"
        } else {
            "custom values"
        });
    let _ = writeln!(out, "kept applied: {kept}");
    out
}
