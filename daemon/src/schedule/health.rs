//! The health check's judgement, pure: from what was read (temperatures,
//! filesystem fill, SMART, USB links, tuning drift, managed mounts) to
//! findings, each with a key so only new ones raise events.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::disks::smart::SmartReport;
use crate::inventory::ThermalZone;
use crate::store::Severity;

/// Filesystem fill that warns, and that is critical.
const FULL_WARNING: f64 = 0.90;
const FULL_CRITICAL: f64 = 0.97;
/// A zone this close to a trip point where the kernel acts warns.
const HOT_MARGIN_C: f64 = 10.0;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable across checks: `full:/srv/data`, `smart-grew:WD-123:pending_sectors`.
    pub key: String,
    pub severity: Severity,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct Filesystem {
    pub mountpoint: String,
    pub used_bytes: u64,
    pub total_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct DiskHealth {
    pub name: String,
    /// Serial or other stable key: counters are compared per disk.
    pub key: String,
    pub smart: Option<SmartReport>,
    pub usb_degraded: bool,
    pub usb_speed_mbps: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub zones: Vec<ThermalZone>,
    pub filesystems: Vec<Filesystem>,
    pub disks: Vec<DiskHealth>,
    /// SMART error counters at the previous check, per disk key.
    pub counters_before: BTreeMap<String, BTreeMap<String, u64>>,
    /// Tuning the drift check had to put back.
    pub tuning_drift: Vec<String>,
    /// Managed mounts whose filesystem is missing, or present and unmounted.
    pub mounts_missing: Vec<String>,
}

pub fn findings(facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    for zone in &facts.zones {
        let Some(c) = zone.celsius else { continue };
        for trip in zone.acting_trips() {
            if c >= trip.celsius - HOT_MARGIN_C {
                let severity = if c >= trip.celsius {
                    Severity::Critical
                } else {
                    Severity::Warning
                };
                out.push(Finding {
                    key: format!("hot:{}:{}", zone.zone, severity.as_str()),
                    severity,
                    message: format!(
                        "{} ({}) is at {c:.1} °C; its {} trip point is {:.1} °C",
                        zone.zone,
                        zone.kind.as_deref().unwrap_or("unknown"),
                        trip.kind,
                        trip.celsius
                    ),
                });
                break;
            }
        }
    }
    for fs in &facts.filesystems {
        if fs.total_bytes == 0 {
            continue;
        }
        let ratio = fs.used_bytes as f64 / fs.total_bytes as f64;
        if ratio >= FULL_WARNING {
            let severity = if ratio >= FULL_CRITICAL {
                Severity::Critical
            } else {
                Severity::Warning
            };
            out.push(Finding {
                key: format!("full:{}:{}", fs.mountpoint, severity.as_str()),
                severity,
                message: format!("{} is {:.0} % full", fs.mountpoint, ratio * 100.0),
            });
        }
    }
    for disk in &facts.disks {
        if disk.usb_degraded {
            out.push(Finding {
                key: format!("usb2:{}", disk.key),
                severity: Severity::Warning,
                message: format!(
                    "{} runs at USB 2 speed ({} Mbit/s): check the cable and the port",
                    disk.name,
                    disk.usb_speed_mbps.unwrap_or(480)
                ),
            });
        }
        let Some(smart) = &disk.smart else { continue };
        if smart.passed == Some(false) {
            out.push(Finding {
                key: format!("smart-failed:{}", disk.key),
                severity: Severity::Critical,
                message: format!(
                    "{}: the drive's SMART health check FAILED; back it up now",
                    disk.name
                ),
            });
        }
        let before = facts.counters_before.get(&disk.key);
        for (counter, now) in &smart.counters {
            let was = before.and_then(|b| b.get(counter)).copied();
            if let Some(was) = was
                && *now > was
            {
                out.push(Finding {
                    // The value is in the key: growing again is news again.
                    key: format!("smart-grew:{}:{counter}:{now}", disk.key),
                    severity: Severity::Warning,
                    message: format!("{}: {counter} grew from {was} to {now}", disk.name),
                });
            }
        }
    }
    for drift in &facts.tuning_drift {
        out.push(Finding {
            key: format!("drift:{drift}"),
            severity: Severity::Warning,
            message: format!("tuning had drifted and was put back: {drift}"),
        });
    }
    for mount in &facts.mounts_missing {
        out.push(Finding {
            key: format!("unmounted:{mount}"),
            severity: Severity::Warning,
            message: format!("{mount} is in fstab but not mounted"),
        });
    }
    out
}

/// The SMART counters to compare with next time, per disk key. A disk
/// not read this time (asleep, unplugged) keeps its earlier counters.
pub fn counters(facts: &Facts) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut counters = facts.counters_before.clone();
    for disk in &facts.disks {
        if let Some(smart) = disk.smart.as_ref().filter(|s| !s.counters.is_empty()) {
            counters.insert(disk.key.clone(), smart.counters.clone());
        }
    }
    counters
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::TripPoint;

    fn smart(pending: u64, passed: bool) -> SmartReport {
        let mut r = SmartReport::unsupported("");
        r.passed = Some(passed);
        r.counters.insert("pending_sectors".into(), pending);
        r
    }

    #[test]
    fn each_problem_becomes_a_finding_with_a_stable_key() {
        let disk = |pending, passed| DiskHealth {
            name: "sda".into(),
            key: "WD-123".into(),
            smart: Some(smart(pending, passed)),
            usb_degraded: true,
            usb_speed_mbps: Some(480),
        };
        let facts = Facts {
            zones: vec![ThermalZone {
                zone: "thermal_zone0".into(),
                kind: Some("cpu-thermal".into()),
                celsius: Some(78.0),
                trips: vec![TripPoint {
                    kind: "passive".into(),
                    celsius: 85.0,
                }],
            }],
            filesystems: vec![
                Filesystem {
                    mountpoint: "/srv/data".into(),
                    used_bytes: 95,
                    total_bytes: 100,
                },
                Filesystem {
                    mountpoint: "/srv/empty".into(),
                    used_bytes: 5,
                    total_bytes: 100,
                },
            ],
            disks: vec![disk(3, false)],
            counters_before: [(
                "WD-123".to_owned(),
                [("pending_sectors".to_owned(), 1)].into(),
            )]
            .into(),
            tuning_drift: vec!["policy0 governor ondemand -> powersave".into()],
            mounts_missing: vec!["/srv/backup".into()],
        };
        let found = findings(&facts);
        let keys: Vec<(&str, Severity)> =
            found.iter().map(|f| (f.key.as_str(), f.severity)).collect();
        assert_eq!(
            keys,
            [
                ("hot:thermal_zone0:warning", Severity::Warning),
                ("full:/srv/data:warning", Severity::Warning),
                ("usb2:WD-123", Severity::Warning),
                ("smart-failed:WD-123", Severity::Critical),
                ("smart-grew:WD-123:pending_sectors:3", Severity::Warning),
                (
                    "drift:policy0 governor ondemand -> powersave",
                    Severity::Warning
                ),
                ("unmounted:/srv/backup", Severity::Warning),
            ]
        );
        assert!(found[4].message.contains("grew from 1 to 3"));
        assert_eq!(counters(&facts)["WD-123"]["pending_sectors"], 3);
        // Asleep this time: the earlier counters are kept for next time.
        let asleep = Facts {
            disks: vec![DiskHealth {
                smart: Some(SmartReport::unsupported("standby")),
                ..disk(0, true)
            }],
            ..facts.clone()
        };
        assert_eq!(counters(&asleep)["WD-123"]["pending_sectors"], 1);
        // Counters seen for the first time are the baseline, not a finding.
        let first = Facts {
            counters_before: BTreeMap::new(),
            disks: vec![DiskHealth {
                usb_degraded: false,
                ..disk(3, true)
            }],
            ..Facts::default()
        };
        assert!(findings(&first).is_empty());
    }
}
