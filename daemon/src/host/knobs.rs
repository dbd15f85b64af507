//! Kernel settings the daemon writes ("knobs"): cpufreq governors, limits
//! and governor tunables, block queue settings and IRQ affinity. Callers
//! name a knob; only this module knows its file.

use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Host, HostError};

const CPUFREQ_DIR: &str = "/sys/devices/system/cpu/cpufreq";

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Knob {
    Governor {
        policy: String,
    },
    MinKhz {
        policy: String,
    },
    MaxKhz {
        policy: String,
    },
    /// A governor's tunable, wherever this kernel keeps it (per policy or
    /// global).
    Tunable {
        policy: String,
        governor: String,
        name: String,
    },
    ReadAheadKb {
        disk: String,
    },
    Scheduler {
        disk: String,
    },
    IrqAffinity {
        irq: u32,
    },
}

impl std::fmt::Display for Knob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Knob::Governor { policy } => write!(f, "{policy} governor"),
            Knob::MinKhz { policy } => write!(f, "{policy} min_khz"),
            Knob::MaxKhz { policy } => write!(f, "{policy} max_khz"),
            Knob::Tunable {
                policy,
                governor,
                name,
            } => write!(f, "{policy} {governor}/{name}"),
            Knob::ReadAheadKb { disk } => write!(f, "{disk} read_ahead_kb"),
            Knob::Scheduler { disk } => write!(f, "{disk} scheduler"),
            Knob::IrqAffinity { irq } => write!(f, "irq {irq} cpus"),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GovernorTunables {
    /// (name, value) of each tunable file.
    pub values: Vec<(String, String)>,
    /// Whether they live per policy (`Some(true)`) or globally; `None`
    /// while the governor is not loaded.
    pub per_policy: Option<bool>,
}

impl Host {
    /// The directory of `governor`'s tunables for `policy`: per policy
    /// (`policyN/<governor>/`) when the driver has one governor instance per
    /// policy, else global (`cpufreq/<governor>/`). `None` while the
    /// governor is not loaded.
    pub fn tunables_dir(&self, policy: &str, governor: &str) -> Option<(PathBuf, bool)> {
        let per_policy = self.resolve(&format!("{CPUFREQ_DIR}/{policy}/{governor}"));
        if per_policy.is_dir() {
            return Some((per_policy, true));
        }
        let global = self.resolve(&format!("{CPUFREQ_DIR}/{governor}"));
        global.is_dir().then_some((global, false))
    }

    /// Every tunable of `governor` for `policy`; none when the governor is
    /// not loaded.
    pub fn governor_tunables(
        &self,
        policy: &str,
        governor: &str,
    ) -> Result<GovernorTunables, HostError> {
        let Some((dir, per_policy)) = self.tunables_dir(policy, governor) else {
            return Ok(GovernorTunables::default());
        };
        let mut values = Vec::new();
        for name in super::list_names(&dir)? {
            if let Some(value) = super::read_attr(&dir.join(&name))? {
                values.push((name, value));
            }
        }
        Ok(GovernorTunables {
            values,
            per_policy: Some(per_policy),
        })
    }

    fn knob_path(&self, knob: &Knob) -> Option<PathBuf> {
        Some(match knob {
            Knob::Governor { policy } => {
                self.resolve(&format!("{CPUFREQ_DIR}/{policy}/scaling_governor"))
            }
            Knob::MinKhz { policy } => {
                self.resolve(&format!("{CPUFREQ_DIR}/{policy}/scaling_min_freq"))
            }
            Knob::MaxKhz { policy } => {
                self.resolve(&format!("{CPUFREQ_DIR}/{policy}/scaling_max_freq"))
            }
            Knob::Tunable {
                policy,
                governor,
                name,
            } => self.tunables_dir(policy, governor)?.0.join(name),
            Knob::ReadAheadKb { disk } => {
                self.resolve(&format!("/sys/block/{disk}/queue/read_ahead_kb"))
            }
            Knob::Scheduler { disk } => self.resolve(&format!("/sys/block/{disk}/queue/scheduler")),
            Knob::IrqAffinity { irq } => {
                self.resolve(&format!("/proc/irq/{irq}/smp_affinity_list"))
            }
        })
    }

    /// The knob's value as the kernel shows it; the I/O scheduler file lists
    /// them all and brackets the one in use, which is what is returned.
    pub fn read_knob(&self, knob: &Knob) -> Result<Option<String>, HostError> {
        let Some(path) = self.knob_path(knob) else {
            return Ok(None);
        };
        let value = super::read_attr(&path)?;
        Ok(match knob {
            Knob::Scheduler { .. } => value.map(|v| selected_scheduler(&v).to_owned()),
            _ => value,
        })
    }

    pub fn write_knob(&self, knob: &Knob, value: &str) -> Result<(), HostError> {
        let path = self.knob_path(knob).ok_or_else(|| HostError::Io {
            path: PathBuf::from(knob.to_string()),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "the governor is not loaded"),
        })?;
        // One write of the whole value, as `echo v > file` does; sysfs
        // ignores the truncation, a fixture file needs it. Never created: a
        // missing attribute means the kernel lacks the knob.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|source| HostError::Io {
                path: path.clone(),
                source,
            })?;
        file.write_all(value.as_bytes())
            .map_err(|source| HostError::Io { path, source })
    }

    /// The knob as a sysfsutils line target (relative to /sys), for knobs
    /// that live in /sys.
    pub fn knob_sysfs_name(&self, knob: &Knob) -> Option<String> {
        let path = self.knob_path(knob)?;
        let sys = self.resolve("/sys");
        path.strip_prefix(&sys)
            .ok()
            .map(|p| p.display().to_string())
    }

    pub fn proc_interrupts(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/interrupts")
    }
}

/// `[mq-deadline] kyber none` -> `mq-deadline`; a single name is itself.
pub fn selected_scheduler(text: &str) -> &str {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or(text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracketed_scheduler_is_the_one_in_use() {
        assert_eq!(
            selected_scheduler("[mq-deadline] kyber bfq none"),
            "mq-deadline"
        );
        assert_eq!(selected_scheduler("none [bfq]"), "bfq");
        assert_eq!(selected_scheduler("none\n"), "none");
    }

    #[test]
    fn tunables_are_found_per_policy_or_globally() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
        let xu4 = Host::new(root.join("odroid-xu4")).unwrap();
        let tunables = xu4.governor_tunables("policy4", "ondemand").unwrap();
        assert_eq!(tunables.per_policy, Some(true));
        assert!(
            tunables
                .values
                .iter()
                .any(|(k, v)| k == "up_threshold" && v == "95")
        );
        let hc4 = Host::new(root.join("odroid-hc4")).unwrap();
        let global = hc4.governor_tunables("policy0", "ondemand").unwrap();
        assert_eq!(global.per_policy, Some(false));
        let schedutil = hc4.governor_tunables("policy0", "schedutil").unwrap();
        assert_eq!(schedutil.per_policy, Some(true));
        let absent = hc4.governor_tunables("policy0", "conservative").unwrap();
        assert_eq!(absent, GovernorTunables::default());
        let knob = Knob::Tunable {
            policy: "policy0".into(),
            governor: "ondemand".into(),
            name: "io_is_busy".into(),
        };
        assert_eq!(
            hc4.knob_sysfs_name(&knob).as_deref(),
            Some("devices/system/cpu/cpufreq/ondemand/io_is_busy")
        );
        assert_eq!(hc4.read_knob(&knob).unwrap().as_deref(), Some("0"));
    }
}
