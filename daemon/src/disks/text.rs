//! The human-readable `nasd disks list` and `nasd disks smart`.

use std::fmt::Write;

use super::smart::{SmartReport, SmartState};
use super::{DiskList, Volume};

fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

fn volume_line(out: &mut String, indent: &str, v: &Volume) {
    let fs = v.fs.as_ref().map_or_else(
        || "no filesystem".to_owned(),
        |fs| format!("{} {}", fs.fs_type, fs.label.as_deref().unwrap_or("")),
    );
    let mount = v.mountpoint.as_ref().map_or_else(String::new, |m| {
        let usage = v.usage.map_or_else(String::new, |u| {
            format!(" ({} of {} used)", size(u.used_bytes), size(u.total_bytes))
        });
        format!(" at {m} [{}]{usage}", v.mount_options.join(","))
    });
    let _ = writeln!(
        out,
        "{indent}{:<10} {:>10}  {}{mount}",
        v.name,
        size(v.size_bytes),
        fs.trim_end()
    );
}

pub fn render_list(list: &DiskList) -> String {
    let mut out = String::new();
    for d in &list.disks {
        let transport = serde_json::to_value(d.transport)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut facts = vec![transport];
        if let Some(speed) = d.usb_speed_mbps {
            facts.push(format!("{speed} Mbit/s"));
        }
        if d.usb_degraded {
            facts.push("USB 3 DISK AT USB 2 SPEED: check cable and port".into());
        }
        facts.push(
            if d.rotational {
                "rotating"
            } else {
                "solid state"
            }
            .into(),
        );
        if d.system {
            facts.push("SYSTEM".into());
        }
        let _ = writeln!(
            out,
            "{} {} (serial {}): {}",
            d.vendor.as_deref().unwrap_or("").trim(),
            d.model.as_deref().unwrap_or("unknown model"),
            d.serial.as_deref().unwrap_or("?"),
            facts.join(", ")
        );
        volume_line(&mut out, "  ", &d.volume);
        for p in &d.partitions {
            volume_line(&mut out, "    ", &p.volume);
        }
    }
    for m in &list.missing_mounts {
        let _ = writeln!(
            out,
            "MISSING: {} ({}, last on {}) is not present",
            m.mountpoint, m.uuid, m.device
        );
    }
    if out.is_empty() {
        out.push_str("no disks\n");
    }
    out
}

pub fn render_smart(report: &SmartReport) -> String {
    let mut out = String::new();
    let health = match (report.state, report.passed) {
        (SmartState::Standby, _) => "asleep (not woken to ask)",
        (SmartState::Unsupported, _) => "no SMART",
        (SmartState::Read, Some(true)) => "PASSED",
        (SmartState::Read, Some(false)) => "FAILING",
        (SmartState::Read, None) => "unknown",
    };
    let _ = writeln!(out, "health:              {health}");
    let rows = [
        (
            "temperature °C",
            report.temperature_celsius.map(|t| t.to_string()),
        ),
        (
            "power-on hours",
            report.power_on_hours.map(|h| h.to_string()),
        ),
        (
            "reallocated sectors",
            report.reallocated_sectors.map(|s| s.to_string()),
        ),
        (
            "pending sectors",
            report.pending_sectors.map(|s| s.to_string()),
        ),
        ("last self-test", report.last_self_test.clone()),
        ("note", report.message.clone()),
    ];
    for (name, value) in rows {
        if let Some(value) = value {
            let _ = writeln!(out, "{:<21}{value}", format!("{name}:"));
        }
    }
    out
}
