//! Pure parsers for the kernel's text formats. Each takes the text a file
//! holds and returns plain data; malformed input yields `None`, never a panic.

use std::collections::BTreeMap;

use super::{Load, Memory};

/// A kernel CPU list such as `0-3,6` (from `related_cpus` or `cpulist`) or a
/// space-separated `0 1 2 3` (older `related_cpus`).
pub fn cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.split([',', ' ', '\n']).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi): (u32, u32) = (lo.parse().ok()?, hi.parse().ok()?);
                if hi < lo || hi - lo > 4096 {
                    return None;
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// A space-separated list of numbers, such as `scaling_available_frequencies`.
pub fn number_list(text: &str) -> Option<Vec<u64>> {
    text.split_whitespace().map(|n| n.parse().ok()).collect()
}

pub fn word_list(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// cpufreq's `stats/time_in_state`: (kHz, time there in 10 ms ticks).
pub fn time_in_state(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|line| {
            let (khz, ticks) = line.split_once(' ')?;
            Some((khz.trim().parse().ok()?, ticks.trim().parse().ok()?))
        })
        .collect()
}

/// `/proc/meminfo`: values are in kB (KiB).
pub fn meminfo(text: &str) -> Option<Memory> {
    let mut fields = BTreeMap::new();
    for line in text.lines() {
        let (key, rest) = line.split_once(':')?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        fields.insert(key.trim(), kib.checked_mul(1024)?);
    }
    Some(Memory {
        total_bytes: *fields.get("MemTotal")?,
        // Kernels before 3.14 lack MemAvailable; free is the honest floor.
        available_bytes: *fields.get("MemAvailable").or(fields.get("MemFree"))?,
        swap_total_bytes: fields.get("SwapTotal").copied().unwrap_or(0),
        swap_free_bytes: fields.get("SwapFree").copied().unwrap_or(0),
    })
}

/// `/proc/loadavg`: `0.52 0.58 0.59 1/467 12345`.
pub fn loadavg(text: &str) -> Option<Load> {
    let mut words = text.split_whitespace();
    Some(Load {
        one: words.next()?.parse().ok()?,
        five: words.next()?.parse().ok()?,
        fifteen: words.next()?.parse().ok()?,
    })
}

/// `/proc/uptime`: seconds since boot, first field, fractional.
pub fn uptime_secs(text: &str) -> Option<u64> {
    let secs: f64 = text.split_whitespace().next()?.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then_some(secs as u64)
}

/// A sysfs temperature in millidegrees Celsius.
pub fn millicelsius(text: &str) -> Option<f64> {
    let milli: i64 = text.trim().parse().ok()?;
    Some(milli as f64 / 1000.0)
}

/// `/sys/class/net/*/speed` in Mbit/s; drivers report -1 (or 65535 on some
/// USB adapters) when the speed is unknown.
pub fn link_speed_mbps(text: &str) -> Option<u64> {
    let speed: i64 = text.trim().parse().ok()?;
    (speed > 0 && speed != 65535).then_some(speed as u64)
}

/// The device-tree model is NUL-terminated.
pub fn device_tree_string(text: &str) -> Option<String> {
    let model = text.trim_end_matches('\0').trim();
    (!model.is_empty()).then(|| model.to_owned())
}

/// The core type of each CPU from `/proc/cpuinfo`: ARM parts by their
/// implementer and part number, other machines by `model name`.
pub fn core_types(cpuinfo: &str) -> BTreeMap<u32, String> {
    let mut types = BTreeMap::new();
    for block in cpuinfo.split("\n\n") {
        let mut cpu = None;
        let (mut implementer, mut part, mut model) = (None, None, None);
        for line in block.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.trim() {
                "processor" => cpu = value.parse::<u32>().ok(),
                "CPU implementer" => implementer = Some(value),
                "CPU part" => part = Some(value),
                "model name" => model = Some(value),
                _ => {}
            }
        }
        let name = match (implementer, part) {
            (Some(i), Some(p)) => arm_core_name(i, p).map(str::to_owned),
            _ => None,
        }
        .or_else(|| model.map(str::to_owned));
        if let (Some(cpu), Some(name)) = (cpu, name) {
            types.insert(cpu, name);
        }
    }
    types
}

/// ARM Ltd. part numbers (implementer 0x41), from the Cortex technical
/// reference manuals' MIDR values; only cores found in single-board computers.
fn arm_core_name(implementer: &str, part: &str) -> Option<&'static str> {
    if !implementer.eq_ignore_ascii_case("0x41") {
        return None;
    }
    Some(match part.to_ascii_lowercase().as_str() {
        "0xc07" => "Cortex-A7",
        "0xc09" => "Cortex-A9",
        "0xc0f" => "Cortex-A15",
        "0xd03" => "Cortex-A53",
        "0xd04" => "Cortex-A35",
        "0xd05" => "Cortex-A55",
        "0xd07" => "Cortex-A57",
        "0xd08" => "Cortex-A72",
        "0xd09" => "Cortex-A73",
        "0xd0b" => "Cortex-A76",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_in_every_spelling() {
        assert_eq!(cpu_list("0-3"), Some(vec![0, 1, 2, 3]));
        assert_eq!(cpu_list("4 5 6 7"), Some(vec![4, 5, 6, 7]));
        assert_eq!(cpu_list("0-1,4,6-7\n"), Some(vec![0, 1, 4, 6, 7]));
        assert_eq!(cpu_list(""), Some(vec![]));
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_list("a-b"), None);
    }

    #[test]
    fn frequency_lists() {
        assert_eq!(
            number_list("200000 300000 1400000 "),
            Some(vec![200_000, 300_000, 1_400_000])
        );
        assert_eq!(number_list("200000 fast"), None);
    }

    #[test]
    fn meminfo_in_bytes_beyond_32_bits() {
        let text =
            "MemTotal:        8388608 kB\nMemFree:          100 kB\nMemAvailable:    6291456 kB\n";
        let mem = meminfo(text).unwrap();
        assert_eq!(mem.total_bytes, 8 << 30);
        assert_eq!(mem.available_bytes, 6 << 30);
    }

    #[test]
    fn meminfo_without_available_uses_free() {
        let mem = meminfo("MemTotal: 2048 kB\nMemFree: 1024 kB\n").unwrap();
        assert_eq!(mem.available_bytes, 1024 * 1024);
        assert!(meminfo("MemFree: 1 kB\n").is_none());
    }

    #[test]
    fn loadavg_and_uptime() {
        let load = loadavg("0.52 0.58 1.59 1/467 12345\n").unwrap();
        assert_eq!((load.one, load.five, load.fifteen), (0.52, 0.58, 1.59));
        assert!(loadavg("0.5").is_none());
        assert_eq!(uptime_secs("350735.47 234388.90\n"), Some(350_735));
        assert_eq!(uptime_secs("-1 0"), None);
    }

    #[test]
    fn temperatures_and_speeds() {
        assert_eq!(millicelsius("45500\n"), Some(45.5));
        assert_eq!(millicelsius("-5000"), Some(-5.0));
        assert_eq!(millicelsius("hot"), None);
        assert_eq!(link_speed_mbps("1000\n"), Some(1000));
        assert_eq!(link_speed_mbps("-1"), None);
        assert_eq!(link_speed_mbps("65535"), None);
    }

    #[test]
    fn device_tree_model_drops_the_nul() {
        assert_eq!(
            device_tree_string("Hardkernel ODROID-HC4\0").as_deref(),
            Some("Hardkernel ODROID-HC4")
        );
        assert_eq!(device_tree_string("\0"), None);
    }

    #[test]
    fn core_types_of_a_big_little_soc() {
        let text = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xc07\n\n\
                    processor\t: 4\nCPU implementer\t: 0x41\nCPU part\t: 0xc0f\n\n\
                    Hardware\t: ODROID-XU4\n";
        let types = core_types(text);
        assert_eq!(types.get(&0).map(String::as_str), Some("Cortex-A7"));
        assert_eq!(types.get(&4).map(String::as_str), Some("Cortex-A15"));
        assert_eq!(types.len(), 2);
    }

    #[test]
    fn core_types_of_a_pc_use_the_model_name() {
        let text =
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU\n";
        assert_eq!(core_types(text)[&0], "Intel(R) Xeon(R) CPU");
    }

    #[test]
    fn unknown_arm_part_is_absent_not_invented() {
        let text = "processor : 0\nCPU implementer : 0x41\nCPU part : 0xfff\n";
        assert!(core_types(text).is_empty());
    }
}
