//! What a run's figures depend on besides the disk: CPU governor and
//! frequencies during the run, temperatures before, during and after,
//! throttling, the filesystem and the device's link. Kept with each run so
//! two results can be told apart by more than their numbers.

use serde::{Deserialize, Serialize};

use crate::inventory::{Cluster, ThermalZone};

/// A run stops when a zone comes this close to a trip point where the
/// kernel starts to act (passive throttling, hot, critical): past it the
/// figures measure the cooling, not the disk.
pub const THERMAL_MARGIN_C: f64 = 5.0;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    pub kernel: Option<String>,
    pub board: Option<String>,
    pub filesystem: Option<FilesystemContext>,
    pub device: Option<DeviceContext>,
    pub cpu: Vec<ClusterDuringRun>,
    pub temperatures: Vec<ZoneDuringRun>,
    /// A zone reached a passive trip point, or a cluster's frequency limit
    /// was lowered during the run (what cpufreq cooling does).
    pub throttled: bool,
    /// How many times the CPU and temperatures were read.
    pub samples: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilesystemContext {
    #[serde(rename = "type")]
    pub fs_type: String,
    pub mountpoint: String,
    pub mount_options: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceContext {
    pub name: String,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub transport: String,
    pub rotational: bool,
    pub usb_speed_mbps: Option<u64>,
    pub usb_degraded: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterDuringRun {
    pub policy: String,
    pub cpus: Vec<u32>,
    /// Every governor seen (more than one: something changed it mid-run).
    pub governors: Vec<String>,
    pub min_khz: Option<u64>,
    pub max_khz: Option<u64>,
    pub mean_khz: Option<u64>,
    /// The hardware maximum, for comparison.
    pub hw_max_khz: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZoneDuringRun {
    pub zone: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub before_c: Option<f64>,
    pub max_c: Option<f64>,
    pub after_c: Option<f64>,
}

/// Accumulates samples of the CPU clusters and thermal zones.
#[derive(Debug, Default)]
pub struct Sampler {
    clusters: Vec<ClusterDuringRun>,
    /// Per cluster: the sum and count of frequency readings, and the
    /// scaling limit at the start.
    sums: Vec<(u64, u64, Option<u64>)>,
    zones: Vec<ZoneDuringRun>,
    throttled: bool,
    samples: u32,
}

impl Sampler {
    /// Starts with the state before the run.
    pub fn new(clusters: &[Cluster], zones: &[ThermalZone]) -> Self {
        let mut sampler = Sampler {
            clusters: clusters
                .iter()
                .map(|c| ClusterDuringRun {
                    policy: c.policy.clone(),
                    cpus: c.cpus.clone(),
                    governors: Vec::new(),
                    min_khz: None,
                    max_khz: None,
                    mean_khz: None,
                    hw_max_khz: c.hw_max_khz,
                })
                .collect(),
            sums: clusters.iter().map(|c| (0, 0, c.max_khz)).collect(),
            zones: zones
                .iter()
                .map(|z| ZoneDuringRun {
                    zone: z.zone.clone(),
                    kind: z.kind.clone(),
                    before_c: z.celsius,
                    max_c: None,
                    after_c: None,
                })
                .collect(),
            throttled: false,
            samples: 0,
        };
        sampler.sample(clusters, zones);
        sampler
    }

    pub fn sample(&mut self, clusters: &[Cluster], zones: &[ThermalZone]) {
        self.samples += 1;
        for c in clusters {
            let Some(i) = self.clusters.iter().position(|d| d.policy == c.policy) else {
                continue;
            };
            let during = &mut self.clusters[i];
            if let Some(governor) = &c.governor
                && !during.governors.contains(governor)
            {
                during.governors.push(governor.clone());
            }
            let (sum, count, limit_at_start) = &mut self.sums[i];
            if let Some(khz) = c.cur_khz {
                during.min_khz = Some(during.min_khz.map_or(khz, |m| m.min(khz)));
                during.max_khz = Some(during.max_khz.map_or(khz, |m| m.max(khz)));
                *sum += khz;
                *count += 1;
                during.mean_khz = Some(*sum / *count);
            }
            if let (Some(now), Some(start)) = (c.max_khz, *limit_at_start)
                && now < start
            {
                self.throttled = true;
            }
        }
        for z in zones {
            let Some(during) = self.zones.iter_mut().find(|d| d.zone == z.zone) else {
                continue;
            };
            if let Some(c) = z.celsius {
                during.max_c = Some(during.max_c.map_or(c, |m| m.max(c)));
                let passive = z
                    .acting_trips()
                    .filter(|t| t.kind == "passive")
                    .any(|t| c >= t.celsius);
                self.throttled |= passive;
            }
        }
    }

    /// Ends with the state after the run; fills the context's CPU and
    /// temperature parts.
    pub fn finish(mut self, zones_after: &[ThermalZone], context: &mut RunContext) {
        for z in zones_after {
            if let Some(during) = self.zones.iter_mut().find(|d| d.zone == z.zone) {
                during.after_c = z.celsius;
            }
        }
        context.cpu = self.clusters;
        context.temperatures = self.zones;
        context.throttled = self.throttled;
        context.samples = self.samples;
    }
}

/// Why a run must stop now, if a zone is within THERMAL_MARGIN_C of a trip
/// point where the kernel acts.
pub fn too_hot(zones: &[ThermalZone]) -> Option<String> {
    zones.iter().find_map(|z| {
        let c = z.celsius?;
        let trip = z.acting_trips().min_by(|a, b| a.celsius.total_cmp(&b.celsius))?;
        (c >= trip.celsius - THERMAL_MARGIN_C).then(|| {
            format!(
                "{} ({}) reached {c:.1} °C, within {THERMAL_MARGIN_C:.0} °C of its {} trip point at {:.1} °C",
                z.zone,
                z.kind.as_deref().unwrap_or("unknown"),
                trip.kind,
                trip.celsius
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::TripPoint;

    fn zone(c: f64) -> ThermalZone {
        ThermalZone {
            zone: "thermal_zone0".into(),
            kind: Some("cpu-thermal".into()),
            celsius: Some(c),
            trips: vec![
                TripPoint {
                    kind: "active".into(),
                    celsius: 50.0,
                },
                TripPoint {
                    kind: "passive".into(),
                    celsius: 85.0,
                },
                TripPoint {
                    kind: "critical".into(),
                    celsius: 120.0,
                },
            ],
        }
    }

    fn cluster(cur: u64, max: u64, governor: &str) -> Cluster {
        Cluster {
            policy: "policy0".into(),
            cpus: vec![0, 1, 2, 3],
            core_type: None,
            governor: Some(governor.into()),
            available_governors: vec![],
            min_khz: Some(200_000),
            max_khz: Some(max),
            cur_khz: Some(cur),
            hw_min_khz: Some(200_000),
            hw_max_khz: Some(2_000_000),
            available_khz: vec![],
        }
    }

    #[test]
    fn a_fan_trip_is_not_a_reason_to_stop_but_the_passive_one_is() {
        // 52 °C is past the 50 °C fan trip: normal on an XU4.
        assert_eq!(too_hot(&[zone(52.0)]), None);
        assert_eq!(too_hot(&[zone(79.9)]), None);
        let why = too_hot(&[zone(80.0)]).unwrap();
        assert!(
            why.contains("thermal_zone0") && why.contains("passive trip point at 85.0"),
            "{why}"
        );
        let no_temp = ThermalZone {
            celsius: None,
            ..zone(0.0)
        };
        assert_eq!(too_hot(&[no_temp]), None);
        // A disabled passive trip (reported at -274 °C) is ignored.
        let mut disabled = zone(50.0);
        disabled.trips[1].celsius = -274.0;
        disabled.trips.truncate(2);
        assert_eq!(too_hot(&[disabled]), None);
    }

    #[test]
    fn frequencies_temperatures_and_throttling_over_a_run() {
        let mut s = Sampler::new(&[cluster(1_000_000, 2_000_000, "ondemand")], &[zone(40.0)]);
        s.sample(&[cluster(2_000_000, 2_000_000, "ondemand")], &[zone(55.0)]);
        s.sample(
            &[cluster(1_500_000, 2_000_000, "performance")],
            &[zone(50.0)],
        );
        let mut context = RunContext::default();
        s.finish(&[zone(45.0)], &mut context);
        let c = &context.cpu[0];
        assert_eq!(c.governors, ["ondemand", "performance"]);
        assert_eq!(
            (c.min_khz, c.max_khz, c.mean_khz),
            (Some(1_000_000), Some(2_000_000), Some(1_500_000))
        );
        let t = &context.temperatures[0];
        assert_eq!(
            (t.before_c, t.max_c, t.after_c),
            (Some(40.0), Some(55.0), Some(45.0))
        );
        assert!(!context.throttled);
        assert_eq!(context.samples, 3);

        // Cooling lowered the limit mid-run.
        let mut s = Sampler::new(&[cluster(2_000_000, 2_000_000, "ondemand")], &[zone(40.0)]);
        s.sample(&[cluster(1_400_000, 1_400_000, "ondemand")], &[zone(60.0)]);
        let mut context = RunContext::default();
        s.finish(&[], &mut context);
        assert!(context.throttled);
        // A passive trip crossed.
        let mut s = Sampler::new(&[], &[zone(40.0)]);
        s.sample(&[], &[zone(86.0)]);
        let mut context = RunContext::default();
        s.finish(&[], &mut context);
        assert!(context.throttled);
    }
}
