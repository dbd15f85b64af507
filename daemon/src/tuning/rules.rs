//! What may be written: governor tunables and their ranges, the presets
//! with their sources, and which governor stands in for a missing one.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::validate::Invalid;

/// The range the kernel accepts for a governor's tunable (from the
/// governors' sources: cpufreq_ondemand.c, cpufreq_conservative.c,
/// cpufreq_governor.c, cpufreq_schedutil.c).
pub fn tunable_range(governor: &str, name: &str) -> Option<(u64, u64)> {
    Some(match (governor, name) {
        ("ondemand" | "conservative", "up_threshold") => (1, 100),
        ("ondemand" | "conservative", "sampling_rate") => (1_000, 10_000_000),
        ("ondemand" | "conservative", "ignore_nice_load") => (0, 1),
        ("ondemand", "sampling_down_factor") => (1, 100_000),
        ("ondemand", "io_is_busy") => (0, 1),
        ("ondemand", "powersave_bias") => (0, 1000),
        ("conservative", "sampling_down_factor") => (1, 10),
        ("conservative", "down_threshold") => (1, 99),
        ("conservative", "freq_step") => (0, 100),
        ("schedutil", "rate_limit_us") => (0, 1_000_000),
        _ => return None,
    })
}

pub fn check_tunable(governor: &str, name: &str, value: u64) -> Result<(), Invalid> {
    let field = format!("tunables.{name}");
    match tunable_range(governor, name) {
        None => Err(Invalid::new(
            field,
            format!("'{name}' is not a tunable of the {governor} governor that nasd sets"),
        )),
        Some((lo, hi)) if !(lo..=hi).contains(&value) => Err(Invalid::new(
            field,
            format!("must be {lo} to {hi} for {governor}, got {value}"),
        )),
        Some(_) => Ok(()),
    }
}

/// Governors to offer when the wanted one is not in the kernel.
pub fn closest_governors(wanted: &str) -> &'static [&'static str] {
    match wanted {
        "ondemand" => &["schedutil", "conservative"],
        "schedutil" => &["ondemand", "conservative"],
        "conservative" => &["ondemand", "schedutil"],
        _ => &[],
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preset {
    pub name: &'static str,
    pub governor: &'static str,
    pub tunables: BTreeMap<String, u64>,
    /// Pin USB, network and SATA interrupts to the fastest cluster.
    pub pin_io_irqs: bool,
    pub source: &'static str,
    pub reason: &'static str,
}

pub fn presets() -> Vec<Preset> {
    let tunables =
        |pairs: &[(&str, u64)]| pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
    vec![
        Preset {
            name: "io-tuned",
            governor: "ondemand",
            tunables: tunables(&[
                ("io_is_busy", 1),
                ("sampling_down_factor", 10),
                ("up_threshold", 80),
            ]),
            pin_io_irqs: true,
            source: "measured on an ODROID-XU4 serving a USB disk",
            reason: "counts I/O wait as load so disk transfers raise the clock (the conservative governor held an ext4 USB disk near 30 MB/s), stays up 10 samples, idles cool; close to performance in throughput",
        },
        Preset {
            name: "armbian",
            governor: "ondemand",
            tunables: tunables(&[
                ("io_is_busy", 1),
                ("sampling_down_factor", 10),
                ("up_threshold", 25),
            ]),
            pin_io_irqs: true,
            source: "Armbian's defaults for the ODROID-XU4",
            reason: "ramps up at 25% load: quicker to full speed than io-tuned, warmer at idle",
        },
        Preset {
            name: "performance",
            governor: "performance",
            tunables: BTreeMap::new(),
            pin_io_irqs: false,
            source: "the kernel's performance governor",
            reason: "always the highest frequency: the throughput ceiling, at the most heat and power",
        },
        Preset {
            name: "powersave",
            governor: "powersave",
            tunables: BTreeMap::new(),
            pin_io_irqs: false,
            source: "the kernel's powersave governor",
            reason: "always the lowest frequency: coolest and quietest, slowest transfers",
        },
        Preset {
            name: "schedutil",
            governor: "schedutil",
            tunables: BTreeMap::new(),
            pin_io_irqs: false,
            source: "the default of mainline kernels",
            reason: "frequency follows the scheduler's utilisation signal; a sound default on the HC4",
        },
    ]
}

pub fn preset(name: &str) -> Result<Preset, Invalid> {
    presets()
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = presets().iter().map(|p| p.name).collect();
            Invalid::new(
                "preset",
                format!(
                    "'{name}' is not a preset; choose one of {}",
                    names.join(", ")
                ),
            )
        })
}

/// The governor a cluster will use, or an error that names the closest
/// one the kernel has.
pub fn check_governor(policy: &str, wanted: &str, available: &[String]) -> Result<(), Invalid> {
    if available.iter().any(|g| g == wanted) {
        return Ok(());
    }
    let closest = closest_governors(wanted)
        .iter()
        .find(|g| available.iter().any(|a| a == *g));
    let hint = closest.map_or_else(String::new, |g| format!("; the closest it has is {g}"));
    Err(Invalid::new(
        "governor",
        format!(
            "{policy} has no {wanted} governor (it has {}){hint}",
            available.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_carry_values_sources_and_reasons() {
        let io = preset("io-tuned").unwrap();
        assert_eq!(io.governor, "ondemand");
        assert_eq!(io.tunables["io_is_busy"], 1);
        assert_eq!(io.tunables["sampling_down_factor"], 10);
        assert_eq!(io.tunables["up_threshold"], 80);
        assert_eq!(preset("armbian").unwrap().tunables["up_threshold"], 25);
        for p in presets() {
            assert!(!p.source.is_empty() && !p.reason.is_empty());
            for (name, value) in &p.tunables {
                check_tunable(p.governor, name, *value).unwrap();
            }
        }
        assert_eq!(preset("turbo").unwrap_err().field, "preset");
    }

    #[test]
    fn tunables_are_range_checked_by_name() {
        assert!(check_tunable("ondemand", "up_threshold", 100).is_ok());
        let err = check_tunable("ondemand", "up_threshold", 101).unwrap_err();
        assert_eq!(err.field, "tunables.up_threshold");
        assert_eq!(err.rule, "must be 1 to 100 for ondemand, got 101");
        assert!(check_tunable("ondemand", "io_is_busy", 2).is_err());
        assert!(check_tunable("conservative", "sampling_down_factor", 11).is_err());
        assert!(check_tunable("schedutil", "up_threshold", 50).is_err());
        assert!(check_tunable("ondemand", "../../../etc/passwd", 1).is_err());
    }

    #[test]
    fn a_missing_governor_names_the_closest() {
        let hc4: Vec<String> = ["performance", "schedutil"].map(String::from).into();
        let err = check_governor("policy0", "ondemand", &hc4).unwrap_err();
        assert_eq!(err.field, "governor");
        assert!(
            err.rule.ends_with("the closest it has is schedutil"),
            "{}",
            err.rule
        );
        assert!(check_governor("policy0", "schedutil", &hc4).is_ok());
    }
}
