//! What the machine is: board, CPU clusters, temperatures, memory, network.
//! Shared by `nasd status` and `GET /api/v1/system`.
//!
//! Absent hardware is reported absent (an empty list or `null`), never as an
//! error and never with invented values.

pub mod parse;
mod text;

use serde::Serialize;

use crate::host::{Host, HostError, SysEntry};

pub use text::render_text;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SystemInfo {
    pub board: Board,
    pub arch: Option<String>,
    pub kernel: Option<String>,
    pub uptime_secs: Option<u64>,
    pub load: Option<Load>,
    pub memory: Option<Memory>,
    pub cpu: Cpu,
    pub thermal: Vec<ThermalZone>,
    pub hwmon: Vec<HwmonSensor>,
    pub network: Vec<NetInterface>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Board {
    /// "unknown" when neither the device tree nor DMI names the board.
    pub model: String,
    pub source: BoardSource,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BoardSource {
    DeviceTree,
    Dmi,
    Unknown,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Load {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Memory {
    pub total_bytes: u64,
    pub available_bytes: u64,
    pub swap_total_bytes: u64,
    pub swap_free_bytes: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Cpu {
    /// One per cpufreq policy; empty where the kernel has no cpufreq.
    pub clusters: Vec<Cluster>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Cluster {
    pub policy: String,
    pub cpus: Vec<u32>,
    pub core_type: Option<String>,
    pub governor: Option<String>,
    pub available_governors: Vec<String>,
    pub min_khz: Option<u64>,
    pub max_khz: Option<u64>,
    pub cur_khz: Option<u64>,
    /// The hardware limits, which the scaling limits stay within.
    pub hw_min_khz: Option<u64>,
    pub hw_max_khz: Option<u64>,
    pub available_khz: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ThermalZone {
    pub zone: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub celsius: Option<f64>,
    /// Where the kernel acts: `passive` (throttle), `active` (fan),
    /// `hot`, `critical` (shut down).
    pub trips: Vec<TripPoint>,
}

impl ThermalZone {
    /// The trip points where the kernel throttles or shuts down. Fans'
    /// `active` trips are not such points; nor are disabled ones, which
    /// drivers report at 0 °C or below (x86_pkg_temp's, some ARM ones).
    pub fn acting_trips(&self) -> impl Iterator<Item = &TripPoint> {
        self.trips.iter().filter(|t| {
            matches!(t.kind.as_str(), "passive" | "hot" | "critical") && t.celsius > 0.0
        })
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TripPoint {
    pub kind: String,
    pub celsius: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HwmonSensor {
    pub chip: String,
    pub name: Option<String>,
    pub sensor: String,
    pub label: Option<String>,
    pub celsius: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NetInterface {
    pub name: String,
    pub operstate: Option<String>,
    pub speed_mbps: Option<u64>,
    pub mac: Option<String>,
}

/// Reads everything the inventory shows from the host.
pub fn collect(host: &Host) -> Result<SystemInfo, HostError> {
    let core_types = host
        .proc_cpuinfo()?
        .map(|text| parse::core_types(&text))
        .unwrap_or_default();
    Ok(SystemInfo {
        board: board(host)?,
        arch: host.machine_arch()?,
        kernel: host.kernel_release()?,
        uptime_secs: host.proc_uptime()?.and_then(|t| parse::uptime_secs(&t)),
        load: host.proc_loadavg()?.and_then(|t| parse::loadavg(&t)),
        memory: host.proc_meminfo()?.and_then(|t| parse::meminfo(&t)),
        cpu: Cpu {
            clusters: host
                .cpufreq_policies()?
                .iter()
                .map(|p| cluster(p, &core_types))
                .collect(),
        },
        thermal: thermal_zones(host)?,
        hwmon: host.hwmon_chips()?.iter().flat_map(hwmon_sensors).collect(),
        network: host
            .net_interfaces()?
            .iter()
            .filter_map(net_interface)
            .collect(),
    })
}

/// The CPU clusters without their core types (cheap enough to read every
/// second while a benchmark runs).
pub fn clusters(host: &Host) -> Result<Vec<Cluster>, HostError> {
    let no_core_types = Default::default();
    Ok(host
        .cpufreq_policies()?
        .iter()
        .map(|p| cluster(p, &no_core_types))
        .collect())
}

pub fn thermal_zones(host: &Host) -> Result<Vec<ThermalZone>, HostError> {
    Ok(host.thermal_zones()?.iter().map(thermal_zone).collect())
}

pub fn board(host: &Host) -> Result<Board, HostError> {
    if let Some(model) = host
        .device_tree_model()?
        .and_then(|t| parse::device_tree_string(&t))
    {
        return Ok(Board {
            model,
            source: BoardSource::DeviceTree,
        });
    }
    // Firmware fills unset DMI fields with placeholders; those name nothing.
    const PLACEHOLDERS: &[&str] = &["", "To Be Filled By O.E.M.", "System Product Name"];
    if let Some(model) = host
        .dmi_product_name()?
        .filter(|m| !PLACEHOLDERS.contains(&m.as_str()))
    {
        return Ok(Board {
            model,
            source: BoardSource::Dmi,
        });
    }
    Ok(Board {
        model: "unknown".to_owned(),
        source: BoardSource::Unknown,
    })
}

fn khz(policy: &SysEntry, attr: &str) -> Option<u64> {
    policy.attr(attr)?.parse().ok()
}

fn cluster(policy: &SysEntry, core_types: &std::collections::BTreeMap<u32, String>) -> Cluster {
    // related_cpus includes offline CPUs of the policy; affected_cpus only
    // the online ones. The cluster is the hardware, so prefer related.
    let cpus = policy
        .attr("related_cpus")
        .or(policy.attr("affected_cpus"))
        .and_then(parse::cpu_list)
        .unwrap_or_default();
    let core_type = cpus.first().and_then(|c| core_types.get(c)).cloned();
    Cluster {
        policy: policy.name.clone(),
        core_type,
        cpus,
        governor: policy.attr("scaling_governor").map(str::to_owned),
        available_governors: policy
            .attr("scaling_available_governors")
            .map(parse::word_list)
            .unwrap_or_default(),
        min_khz: khz(policy, "scaling_min_freq"),
        max_khz: khz(policy, "scaling_max_freq"),
        cur_khz: khz(policy, "scaling_cur_freq"),
        hw_min_khz: khz(policy, "cpuinfo_min_freq"),
        hw_max_khz: khz(policy, "cpuinfo_max_freq"),
        available_khz: policy
            .attr("scaling_available_frequencies")
            .and_then(parse::number_list)
            .unwrap_or_default(),
    }
}

fn thermal_zone(zone: &SysEntry) -> ThermalZone {
    let mut trips = Vec::new();
    for n in 0.. {
        let (Some(kind), Some(temp)) = (
            zone.attr(&format!("trip_point_{n}_type")),
            zone.attr(&format!("trip_point_{n}_temp")),
        ) else {
            break;
        };
        if let Some(celsius) = parse::millicelsius(temp) {
            trips.push(TripPoint {
                kind: kind.to_owned(),
                celsius,
            });
        }
    }
    ThermalZone {
        zone: zone.name.clone(),
        kind: zone.attr("type").map(str::to_owned),
        celsius: zone.attr("temp").and_then(parse::millicelsius),
        trips,
    }
}

fn hwmon_sensors(chip: &SysEntry) -> Vec<HwmonSensor> {
    chip.attrs
        .iter()
        .filter_map(|(attr, value)| {
            let sensor = attr.strip_suffix("_input")?;
            Some(HwmonSensor {
                chip: chip.name.clone(),
                name: chip.attr("name").map(str::to_owned),
                sensor: sensor.to_owned(),
                label: chip.attr(&format!("{sensor}_label")).map(str::to_owned),
                celsius: parse::millicelsius(value)?,
            })
        })
        .collect()
}

fn net_interface(iface: &SysEntry) -> Option<NetInterface> {
    const ARPHRD_LOOPBACK: &str = "772";
    if iface.attr("type") == Some(ARPHRD_LOOPBACK) {
        return None;
    }
    Some(NetInterface {
        name: iface.name.clone(),
        operstate: iface.attr("operstate").map(str::to_owned),
        speed_mbps: iface.attr("speed").and_then(parse::link_speed_mbps),
        mac: iface.attr("address").map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    //! These run against fixture trees copied from real boards (see
    //! tests/fixtures/README.md): the boards themselves are not here.
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> Host {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures")
            .join(name);
        Host::new(root).unwrap()
    }

    #[test]
    fn odroid_xu4_has_a_little_and_a_big_cluster() {
        let info = collect(&fixture("odroid-xu4")).unwrap();
        assert_eq!(info.board.model, "Hardkernel Odroid XU4");
        assert_eq!(info.board.source, BoardSource::DeviceTree);
        assert_eq!(info.arch.as_deref(), Some("armv7l"));
        let [little, big] = info.cpu.clusters.as_slice() else {
            panic!("expected two clusters: {:?}", info.cpu.clusters);
        };
        assert_eq!(little.policy, "policy0");
        assert_eq!(little.cpus, [0, 1, 2, 3]);
        assert_eq!(little.core_type.as_deref(), Some("Cortex-A7"));
        assert_eq!(little.max_khz, Some(1_400_000));
        assert_eq!(big.policy, "policy4");
        assert_eq!(big.cpus, [4, 5, 6, 7]);
        assert_eq!(big.core_type.as_deref(), Some("Cortex-A15"));
        assert_eq!(big.hw_max_khz, Some(2_000_000));
        assert_eq!(big.governor.as_deref(), Some("ondemand"));
        assert!(big.available_khz.contains(&200_000));
        assert!(info.thermal.len() >= 4);
        assert!(info.thermal.iter().all(|z| z.celsius.is_some()));
        let eth0 = info.network.iter().find(|n| n.name == "eth0").unwrap();
        assert_eq!(eth0.speed_mbps, Some(1000));
        assert!(info.network.iter().all(|n| n.name != "lo"));
        // 2 GB board: the byte count needs more than usize on armv7 allows
        // for larger boards, so it is u64 throughout.
        assert!(info.memory.unwrap().total_bytes > 1 << 30);
    }

    #[test]
    fn odroid_hc4_has_one_cluster_and_drive_temperatures() {
        let info = collect(&fixture("odroid-hc4")).unwrap();
        assert_eq!(info.board.model, "Hardkernel ODROID-HC4");
        assert_eq!(info.arch.as_deref(), Some("aarch64"));
        let [cluster] = info.cpu.clusters.as_slice() else {
            panic!("expected one cluster: {:?}", info.cpu.clusters);
        };
        assert_eq!(cluster.cpus, [0, 1, 2, 3]);
        assert_eq!(cluster.core_type.as_deref(), Some("Cortex-A55"));
        assert_eq!(cluster.governor.as_deref(), Some("schedutil"));
        assert!(cluster.available_governors.iter().any(|g| g == "ondemand"));
        let types: Vec<_> = info
            .thermal
            .iter()
            .filter_map(|z| z.kind.as_deref())
            .collect();
        assert_eq!(types, ["cpu-thermal", "ddr-thermal"]);
        let passive = &info.thermal[0].trips[0];
        assert_eq!((passive.kind.as_str(), passive.celsius), ("passive", 85.0));
        let drives = info
            .hwmon
            .iter()
            .filter(|s| s.name.as_deref() == Some("drivetemp"))
            .count();
        assert_eq!(drives, 2);
    }

    #[test]
    fn bare_vm_reports_absent_hardware_as_absent() {
        let info = collect(&fixture("bare-vm")).unwrap();
        assert!(info.cpu.clusters.is_empty());
        assert!(info.thermal.is_empty());
        assert!(info.hwmon.is_empty());
        assert_eq!(info.board.source, BoardSource::Dmi);
        assert_eq!(info.arch.as_deref(), Some("x86_64"));
        // virtio_net reports no link speed; it must not be invented.
        assert_eq!(info.network[0].speed_mbps, None);
    }

    #[test]
    fn an_empty_root_is_unknown_everything() {
        let dir = tempfile::tempdir().unwrap();
        let info = collect(&Host::new(dir.path()).unwrap()).unwrap();
        assert_eq!(info.board.model, "unknown");
        assert_eq!(info.arch, None);
        assert_eq!(info.memory, None);
        assert!(info.network.is_empty());
    }
}
