//! Conditions worth an event: a sensor hot for a while, a filesystem
//! nearly full, a USB 3 disk running at USB 2 speed. Each is reported once
//! when it starts, and again only after it has cleared.

use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub hot_celsius: f64,
    pub hot_for_secs: i64,
    pub full_ratio: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            hot_celsius: 80.0,
            hot_for_secs: 60,
            full_ratio: 0.9,
        }
    }
}

#[derive(Debug, Default)]
pub struct Alerts {
    thresholds: Thresholds,
    hot_since: BTreeMap<String, i64>,
    active: BTreeSet<String>,
}

impl Alerts {
    pub fn new(thresholds: Thresholds) -> Self {
        Self {
            thresholds,
            ..Self::default()
        }
    }

    /// `true` on the edge into the condition; clears when it ends.
    fn edge(&mut self, key: String, on: bool) -> bool {
        if on {
            self.active.insert(key)
        } else {
            self.active.remove(&key);
            false
        }
    }

    pub fn temperature(&mut self, sensor: &str, celsius: f64, now: i64) -> Option<String> {
        let t = self.thresholds;
        let hot = celsius > t.hot_celsius;
        if !hot {
            self.hot_since.remove(sensor);
        }
        let since = *self.hot_since.entry(sensor.to_owned()).or_insert(now);
        let long_enough = hot && now - since >= t.hot_for_secs;
        self.edge(format!("hot:{sensor}"), long_enough).then(|| {
            format!(
                "{sensor} has been above {} °C for {} s (now {celsius:.1} °C)",
                t.hot_celsius,
                now - since
            )
        })
    }

    pub fn filesystem(&mut self, mountpoint: &str, used_ratio: f64) -> Option<String> {
        let full = used_ratio > self.thresholds.full_ratio;
        self.edge(format!("full:{mountpoint}"), full)
            .then(|| format!("{mountpoint} is {:.0} % full", used_ratio * 100.0))
    }

    pub fn usb_link(
        &mut self,
        disk: &str,
        degraded: bool,
        speed_mbps: Option<u64>,
    ) -> Option<String> {
        self.edge(format!("usb:{disk}"), degraded).then(|| {
            format!(
                "{disk} is a USB 3 disk running at {} Mbit/s (USB 2): check the cable, hub and port",
                speed_mbps.unwrap_or(0)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hot_sensor_is_reported_once_after_the_duration_and_again_after_cooling() {
        let mut a = Alerts::new(Thresholds::default());
        assert_eq!(a.temperature("cpu", 85.0, 0), None);
        assert_eq!(a.temperature("cpu", 85.0, 30), None, "not long enough");
        assert!(
            a.temperature("cpu", 86.0, 60)
                .unwrap()
                .contains("above 80 °C for 60 s")
        );
        assert_eq!(a.temperature("cpu", 90.0, 70), None, "once");
        assert_eq!(a.temperature("cpu", 50.0, 80), None);
        assert_eq!(a.temperature("cpu", 85.0, 90), None, "the clock restarts");
        assert!(a.temperature("cpu", 85.0, 150).is_some());
    }

    #[test]
    fn full_filesystems_and_slow_usb_links_edge_trigger() {
        let mut a = Alerts::new(Thresholds::default());
        assert!(
            a.filesystem("/srv/media", 0.95)
                .unwrap()
                .contains("95 % full")
        );
        assert_eq!(a.filesystem("/srv/media", 0.96), None);
        assert_eq!(a.filesystem("/srv/media", 0.5), None);
        assert!(a.filesystem("/srv/media", 0.91).is_some());
        assert!(
            a.usb_link("sdb", true, Some(480))
                .unwrap()
                .contains("480 Mbit/s")
        );
        assert_eq!(a.usb_link("sdb", true, Some(480)), None);
        assert_eq!(a.usb_link("sda", false, Some(5000)), None);
    }
}
