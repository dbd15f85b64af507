//! What the collectd plugin (the `nasd-collectd` crate) reports, in
//! collectd's terms: per-cluster frequency and every temperature, from the
//! same inventory code the daemon uses.

use crate::inventory::SystemInfo;

/// One value for collectd: its type from types.db, the type instance, and
/// the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub kind: &'static str,
    pub instance: String,
    pub value: f64,
}

/// Frequencies in Hz as `cpufreq-<policy>`, temperatures in °C as
/// `temperature-<zone type or hwmon chip/sensor>`.
pub fn readings(info: &SystemInfo) -> Vec<Reading> {
    let mut out = Vec::new();
    for c in &info.cpu.clusters {
        if let Some(khz) = c.cur_khz {
            out.push(Reading {
                kind: "cpufreq",
                instance: c.policy.clone(),
                value: khz as f64 * 1000.0,
            });
        }
    }
    for z in &info.thermal {
        if let Some(celsius) = z.celsius {
            out.push(Reading {
                kind: "temperature",
                instance: z.kind.clone().unwrap_or_else(|| z.zone.clone()),
                value: celsius,
            });
        }
    }
    for s in &info.hwmon {
        out.push(Reading {
            kind: "temperature",
            instance: format!("{}-{}", s.name.as_deref().unwrap_or(&s.chip), s.sensor),
            value: s.celsius,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Host;

    #[test]
    fn the_xu4_reports_two_frequencies_and_five_zones() {
        // On the XU4 fixture tree (the board is not here).
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/odroid-xu4");
        let info = crate::inventory::collect(&Host::new(root).unwrap()).unwrap();
        let r = readings(&info);
        assert_eq!(
            r[1],
            Reading {
                kind: "cpufreq",
                instance: "policy4".into(),
                value: 1e9
            }
        );
        assert_eq!(r.iter().filter(|r| r.kind == "temperature").count(), 5);
        assert!(r.contains(&Reading {
            kind: "temperature",
            instance: "cpu0-thermal".into(),
            value: 52.0
        }));
    }
}
