//! The human-readable `nasd status`.

use std::fmt::Write;

use super::SystemInfo;

fn or_unknown(value: Option<&str>) -> &str {
    value.unwrap_or("unknown")
}

fn mhz(khz: Option<u64>) -> String {
    khz.map_or_else(|| "?".to_owned(), |k| format!("{}", k / 1000))
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

pub fn render_text(info: &SystemInfo) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "board:    {}", info.board.model);
    let _ = writeln!(out, "arch:     {}", or_unknown(info.arch.as_deref()));
    let _ = writeln!(out, "kernel:   {}", or_unknown(info.kernel.as_deref()));
    if let Some(secs) = info.uptime_secs {
        let _ = writeln!(
            out,
            "uptime:   {}d {}h {}m",
            secs / 86_400,
            secs / 3600 % 24,
            secs / 60 % 60
        );
    }
    if let Some(load) = info.load {
        let _ = writeln!(
            out,
            "load:     {:.2} {:.2} {:.2}",
            load.one, load.five, load.fifteen
        );
    }
    if let Some(mem) = info.memory {
        let _ = writeln!(
            out,
            "memory:   {} available of {}",
            gib(mem.available_bytes),
            gib(mem.total_bytes)
        );
    }
    if info.cpu.clusters.is_empty() {
        let _ = writeln!(out, "cpufreq:  none");
    }
    for c in &info.cpu.clusters {
        let cpus: Vec<String> = c.cpus.iter().map(u32::to_string).collect();
        let _ = writeln!(
            out,
            "cluster:  {} cpus {} {} governor {} {}-{} MHz (now {} MHz)",
            c.policy,
            cpus.join(","),
            or_unknown(c.core_type.as_deref()),
            or_unknown(c.governor.as_deref()),
            mhz(c.min_khz),
            mhz(c.max_khz),
            mhz(c.cur_khz),
        );
    }
    for z in &info.thermal {
        let temp = z
            .celsius
            .map_or_else(|| "?".to_owned(), |t| format!("{t:.1}"));
        let _ = writeln!(
            out,
            "thermal:  {} {} {} °C",
            z.zone,
            or_unknown(z.kind.as_deref()),
            temp
        );
    }
    for s in &info.hwmon {
        let _ = writeln!(
            out,
            "sensor:   {} {}{} {:.1} °C",
            or_unknown(s.name.as_deref()),
            s.sensor,
            s.label
                .as_deref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default(),
            s.celsius
        );
    }
    for n in &info.network {
        let speed = n
            .speed_mbps
            .map_or_else(|| "speed unknown".to_owned(), |s| format!("{s} Mbit/s"));
        let _ = writeln!(
            out,
            "network:  {} {} {}",
            n.name,
            or_unknown(n.operstate.as_deref()),
            speed
        );
    }
    out
}
