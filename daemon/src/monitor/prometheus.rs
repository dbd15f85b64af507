//! The Prometheus text exposition of the latest values.

use std::collections::BTreeMap;
use std::fmt::Write;

/// `name{labels}` -> (`name`, `{labels}`).
fn split_key(key: &str) -> (&str, &str) {
    key.find('{').map_or((key, ""), |i| key.split_at(i))
}

/// Gauges (the latest sample of each series) and counters (running totals
/// of disk and network traffic), each family with its TYPE line.
pub fn render(gauges: &BTreeMap<String, f64>, counters: &BTreeMap<String, u64>) -> String {
    let mut out = String::new();
    let mut family = "";
    for (key, value) in gauges {
        let (name, labels) = split_key(key);
        if name != family {
            let _ = writeln!(out, "# TYPE nasd_{name} gauge");
            family = name;
        }
        let _ = writeln!(out, "nasd_{name}{labels} {value}");
    }
    family = "";
    for (key, value) in counters {
        let (name, labels) = split_key(key);
        if name != family {
            let _ = writeln!(out, "# TYPE nasd_{name} counter");
            family = name;
        }
        let _ = writeln!(out, "nasd_{name}{labels} {value}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_typed_once() {
        let gauges: BTreeMap<String, f64> = [
            ("cpu_frequency_hertz{policy=\"policy0\"}".to_owned(), 6e8),
            ("cpu_frequency_hertz{policy=\"policy4\"}".to_owned(), 1.8e9),
            ("load{period=\"1\"}".to_owned(), 0.5),
        ]
        .into();
        let counters: BTreeMap<String, u64> =
            [("disk_read_bytes_total{disk=\"sda\"}".to_owned(), 42)].into();
        let text = render(&gauges, &counters);
        assert_eq!(
            text.matches("# TYPE nasd_cpu_frequency_hertz gauge")
                .count(),
            1
        );
        assert!(text.contains("nasd_cpu_frequency_hertz{policy=\"policy4\"} 1800000000\n"));
        assert!(text.contains("# TYPE nasd_disk_read_bytes_total counter\nnasd_disk_read_bytes_total{disk=\"sda\"} 42\n"));
    }
}
