//! One sample of everything the board exposes. Rates come from the
//! difference of two readings, so the first sample of a counter gives none.

use std::collections::BTreeMap;

use super::parse::{self, DiskCounters, NetCounters};
use crate::host::{Host, HostError};
use crate::inventory::{self, parse as kparse};

/// Rates above these are not believed (a counter that restarted): 10 GB/s
/// for a disk on these boards, 10 Gbit/s for a network interface.
const DISK_PLAUSIBLE_BYTES_PER_SEC: f64 = 10e9;
const NET_PLAUSIBLE_BYTES_PER_SEC: f64 = 1.25e9;

/// Block devices that are not disks worth graphing.
fn graphed_disk(name: &str) -> bool {
    !["loop", "ram", "zram", "dm-", "md", "mtdblock", "sr"]
        .iter()
        .any(|p| name.starts_with(p))
        && !(name.starts_with("mmcblk") && (name.contains("boot") || name.contains("rpmb")))
}

/// Every series name the collector makes (Prometheus adds `nasd_`).
pub const GAUGES: &[&str] = &[
    "cpu_frequency_hertz",
    "cpu_time_at_frequency_ratio",
    "temperature_celsius",
    "load",
    "memory_total_bytes",
    "memory_available_bytes",
    "swap_used_bytes",
    "cpu_utilisation_ratio",
    "disk_read_bytes_per_second",
    "disk_write_bytes_per_second",
    "disk_iops",
    "disk_busy_ratio",
    "network_receive_bytes_per_second",
    "network_transmit_bytes_per_second",
    "network_errors_per_second",
    "filesystem_used_ratio",
];
pub const COUNTERS: &[&str] = &[
    "disk_read_bytes_total",
    "disk_written_bytes_total",
    "network_receive_bytes_total",
    "network_transmit_bytes_total",
];

/// A series key: `name{label="value",...}` (Prometheus' spelling).
pub fn key(name: &str, labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return name.to_owned();
    }
    let pairs: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("{name}{{{}}}", pairs.join(","))
}

#[derive(Debug, Default)]
pub struct Collector {
    stat: BTreeMap<String, (u64, u64)>,
    disks: BTreeMap<String, DiskCounters>,
    net: BTreeMap<String, NetCounters>,
    time_in_state: BTreeMap<String, Vec<(u64, u64)>>,
    /// Running totals for Prometheus counters.
    pub counters: BTreeMap<String, u64>,
}

fn rate(old: Option<u64>, new: u64, secs: f64, plausible: f64) -> Option<f64> {
    let delta = parse::counter_delta(old?, new, (plausible * secs) as u64)?;
    Some(delta as f64 / secs)
}

impl Collector {
    /// Reads the host and returns (series key, value) pairs; `secs` is the
    /// time since the previous sample (`None` the first time).
    pub fn sample(
        &mut self,
        host: &Host,
        secs: Option<f64>,
    ) -> Result<Vec<(String, f64)>, HostError> {
        let mut out = Vec::new();
        let info = inventory::collect(host)?;
        // Rebuilt from what is present now: a device that went away stops
        // being reported.
        self.counters.clear();
        for (cluster, raw) in info.cpu.clusters.iter().zip(host.cpufreq_policies()?) {
            let policy = cluster.policy.as_str();
            if let Some(khz) = cluster.cur_khz {
                out.push((
                    key("cpu_frequency_hertz", &[("policy", policy)]),
                    khz as f64 * 1000.0,
                ));
            }
            let tis = kparse::time_in_state(raw.attr("stats/time_in_state").unwrap_or_default());
            if let Some(old) = self.time_in_state.insert(policy.to_owned(), tis.clone()) {
                for (khz, share) in parse::time_in_state_shares(&old, &tis) {
                    let khz = khz.to_string();
                    out.push((
                        key(
                            "cpu_time_at_frequency_ratio",
                            &[("policy", policy), ("khz", &khz)],
                        ),
                        share,
                    ));
                }
            }
        }
        for zone in &info.thermal {
            if let Some(c) = zone.celsius {
                let kind = zone.kind.as_deref().unwrap_or("");
                out.push((
                    key(
                        "temperature_celsius",
                        &[("sensor", &zone.zone), ("type", kind)],
                    ),
                    c,
                ));
            }
        }
        for s in &info.hwmon {
            let sensor = format!("{}/{}", s.chip, s.sensor);
            let kind = s.name.as_deref().unwrap_or("");
            out.push((
                key(
                    "temperature_celsius",
                    &[("sensor", &sensor), ("type", kind)],
                ),
                s.celsius,
            ));
        }
        if let Some(load) = info.load {
            for (period, v) in [("1", load.one), ("5", load.five), ("15", load.fifteen)] {
                out.push((key("load", &[("period", period)]), v));
            }
        }
        if let Some(m) = info.memory {
            out.push((key("memory_total_bytes", &[]), m.total_bytes as f64));
            out.push((key("memory_available_bytes", &[]), m.available_bytes as f64));
            out.push((
                key("swap_used_bytes", &[]),
                m.swap_total_bytes.saturating_sub(m.swap_free_bytes) as f64,
            ));
        }
        let stat = host
            .proc_stat()?
            .map(|t| parse::proc_stat(&t))
            .unwrap_or_default();
        for (cpu, (busy, total)) in &stat {
            if let Some((old_busy, old_total)) = self.stat.get(cpu)
                && total > old_total
            {
                let ratio = busy.saturating_sub(*old_busy) as f64 / (total - old_total) as f64;
                out.push((
                    key("cpu_utilisation_ratio", &[("cpu", cpu)]),
                    ratio.clamp(0.0, 1.0),
                ));
            }
        }
        self.stat = stat;

        let disks = host
            .proc_diskstats()?
            .map(|t| parse::diskstats(&t))
            .unwrap_or_default();
        let present = host.block_device_names()?;
        for (name, d) in disks
            .iter()
            .filter(|(n, _)| graphed_disk(n) && present.contains(n))
        {
            self.counters.insert(
                key("disk_read_bytes_total", &[("disk", name)]),
                d.read_bytes,
            );
            self.counters.insert(
                key("disk_written_bytes_total", &[("disk", name)]),
                d.written_bytes,
            );
            let (Some(secs), Some(old)) = (secs, self.disks.get(name)) else {
                continue;
            };
            let series = [
                (
                    "disk_read_bytes_per_second",
                    rate(
                        Some(old.read_bytes),
                        d.read_bytes,
                        secs,
                        DISK_PLAUSIBLE_BYTES_PER_SEC,
                    ),
                ),
                (
                    "disk_write_bytes_per_second",
                    rate(
                        Some(old.written_bytes),
                        d.written_bytes,
                        secs,
                        DISK_PLAUSIBLE_BYTES_PER_SEC,
                    ),
                ),
                (
                    "disk_iops",
                    rate(Some(old.reads + old.writes), d.reads + d.writes, secs, 1e7),
                ),
                (
                    "disk_busy_ratio",
                    rate(Some(old.io_ms), d.io_ms, secs, 1000.0).map(|ms| (ms / 1000.0).min(1.0)),
                ),
            ];
            for (name_of, value) in series {
                if let Some(v) = value {
                    out.push((key(name_of, &[("disk", name)]), v));
                }
            }
        }
        self.disks = disks;

        let net = host
            .proc_net_dev()?
            .map(|t| parse::net_dev(&t))
            .unwrap_or_default();
        for (iface, n) in net.iter().filter(|(i, _)| i.as_str() != "lo") {
            self.counters.insert(
                key("network_receive_bytes_total", &[("interface", iface)]),
                n.rx_bytes,
            );
            self.counters.insert(
                key("network_transmit_bytes_total", &[("interface", iface)]),
                n.tx_bytes,
            );
            let (Some(secs), Some(old)) = (secs, self.net.get(iface)) else {
                continue;
            };
            let series = [
                (
                    "network_receive_bytes_per_second",
                    rate(
                        Some(old.rx_bytes),
                        n.rx_bytes,
                        secs,
                        NET_PLAUSIBLE_BYTES_PER_SEC,
                    ),
                ),
                (
                    "network_transmit_bytes_per_second",
                    rate(
                        Some(old.tx_bytes),
                        n.tx_bytes,
                        secs,
                        NET_PLAUSIBLE_BYTES_PER_SEC,
                    ),
                ),
                (
                    "network_errors_per_second",
                    rate(
                        Some(old.rx_errors + old.tx_errors),
                        n.rx_errors + n.tx_errors,
                        secs,
                        1e6,
                    ),
                ),
            ];
            for (name_of, value) in series {
                if let Some(v) = value {
                    out.push((key(name_of, &[("interface", iface)]), v));
                }
            }
        }
        self.net = net;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_prometheus_shaped_and_escaped() {
        assert_eq!(key("load", &[("period", "1")]), "load{period=\"1\"}");
        assert_eq!(key("x", &[]), "x");
        assert_eq!(key("t", &[("type", "a\"b")]), "t{type=\"a\\\"b\"}");
    }

    #[test]
    fn the_shipped_dashboard_uses_only_metrics_nasd_exports() {
        let dashboard = include_str!("../../../etc/grafana/nasd-dashboard.json");
        let json: serde_json::Value = serde_json::from_str(dashboard).unwrap();
        let mut used = 0;
        for panel in json["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = target["expr"].as_str().unwrap();
                let name: String = expr[expr.find("nasd_").unwrap() + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                assert!(
                    GAUGES.contains(&name.as_str()) || COUNTERS.contains(&name.as_str()),
                    "{name}"
                );
                used += 1;
            }
        }
        assert!(used >= 10);
    }

    #[test]
    fn the_collector_makes_only_the_listed_names() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/odroid-xu4");
        let host = Host::new(root).unwrap();
        let mut collector = Collector::default();
        collector.sample(&host, None).unwrap();
        let values = collector.sample(&host, Some(1.0)).unwrap();
        assert!(values.len() > 20);
        for (series, _) in &values {
            let name = series.split('{').next().unwrap();
            assert!(GAUGES.contains(&name), "{name} is not listed");
        }
        for counter in collector.counters.keys() {
            assert!(
                COUNTERS.contains(&counter.split('{').next().unwrap()),
                "{counter}"
            );
        }
    }

    #[test]
    fn a_counter_restart_gives_no_rate() {
        assert_eq!(rate(Some(100), 300, 10.0, 1e9), Some(20.0));
        assert_eq!(rate(Some(5_000_000_000), 10, 10.0, 1e6), None);
        assert_eq!(rate(None, 10, 10.0, 1e6), None);
    }
}
