//! Pure parsers of the kernel's counters, and the arithmetic that turns two
//! readings into a rate without spikes when a counter wraps or restarts.

use std::collections::BTreeMap;

/// Jiffies per CPU from `/proc/stat` (`cpu` is the total): (busy, total).
pub fn proc_stat(text: &str) -> BTreeMap<String, (u64, u64)> {
    text.lines()
        .filter(|l| l.starts_with("cpu"))
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            let name = fields.next()?.to_owned();
            let values: Vec<u64> = fields.filter_map(|f| f.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal (guest is in user)
            let total: u64 = values.iter().take(8).sum();
            let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
            Some((name, (total.saturating_sub(idle), total)))
        })
        .collect()
}

/// Per-device counters from `/proc/diskstats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiskCounters {
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub written_bytes: u64,
    /// Milliseconds the device had I/O in flight.
    pub io_ms: u64,
}

pub fn diskstats(text: &str) -> BTreeMap<String, DiskCounters> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
            Some((
                (*f.get(2)?).to_owned(),
                DiskCounters {
                    reads: n(3)?,
                    // Sectors are 512 bytes in /proc/diskstats, always.
                    read_bytes: n(5)?.saturating_mul(512),
                    writes: n(7)?,
                    written_bytes: n(9)?.saturating_mul(512),
                    io_ms: n(12)?,
                },
            ))
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NetCounters {
    pub rx_bytes: u64,
    pub rx_errors: u64,
    pub tx_bytes: u64,
    pub tx_errors: u64,
}

/// `/proc/net/dev`: two header lines, then `iface: rx(8 fields) tx(8)`.
pub fn net_dev(text: &str) -> BTreeMap<String, NetCounters> {
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let v: Vec<u64> = rest
                .split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect();
            Some((
                name.trim().to_owned(),
                NetCounters {
                    rx_bytes: *v.first()?,
                    rx_errors: *v.get(2)?,
                    tx_bytes: *v.get(8)?,
                    tx_errors: *v.get(10)?,
                },
            ))
        })
        .collect()
}

/// `write_bytes` of `/proc/<pid>/io`: what reached the block layer.
pub fn io_write_bytes(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The increase of a counter between two readings, or `None` when it went
/// backwards. A 32-bit counter (armv7 kernels) that wrapped gives its true
/// increase when that stays under `plausible`; anything else that went
/// backwards is a restart (a re-plugged disk), and yields nothing rather
/// than a spike.
pub fn counter_delta(old: u64, new: u64, plausible: u64) -> Option<u64> {
    if new >= old {
        return Some(new - old);
    }
    if old <= u64::from(u32::MAX) {
        let wrapped = (u64::from(u32::MAX) - old) + new + 1;
        if wrapped <= plausible {
            return Some(wrapped);
        }
    }
    None
}

/// The share of time spent at each frequency between two `time_in_state`
/// readings, as (kHz, fraction); empty when no time passed.
pub fn time_in_state_shares(old: &[(u64, u64)], new: &[(u64, u64)]) -> Vec<(u64, f64)> {
    let deltas: Vec<(u64, u64)> = new
        .iter()
        .map(|(khz, ticks)| {
            let before = old
                .iter()
                .find(|(k, _)| k == khz)
                .map_or(*ticks, |(_, t)| *t);
            (*khz, ticks.saturating_sub(before))
        })
        .collect();
    let total: u64 = deltas.iter().map(|(_, d)| d).sum();
    if total == 0 {
        return Vec::new();
    }
    deltas
        .into_iter()
        .map(|(khz, d)| (khz, d as f64 / total as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_busy_and_total_jiffies() {
        let text = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 60 0 20 400 20 0 0 0 0 0\nintr 1 2 3\n";
        let stat = proc_stat(text);
        assert_eq!(stat["cpu"], (150, 1000));
        assert_eq!(stat["cpu0"], (80, 500));
        assert_eq!(stat.len(), 2);
    }

    #[test]
    fn diskstats_in_bytes() {
        let text = "   8       0 sda 1200 10 204800 500 300 5 40960 900 0 1500 1400 0 0 0 0\n";
        let d = diskstats(text)["sda"];
        assert_eq!(
            (d.reads, d.read_bytes, d.writes, d.written_bytes, d.io_ms),
            (1200, 104_857_600, 300, 20_971_520, 1500)
        );
    }

    #[test]
    fn net_dev_counters() {
        let text = "Inter-|   Receive |  Transmit\n face |bytes packets errs|bytes\n  eth0: 1000 10 2 0 0 0 0 0 5000 20 1 0 0 0 0 0\n";
        assert_eq!(
            net_dev(text)["eth0"],
            NetCounters {
                rx_bytes: 1000,
                rx_errors: 2,
                tx_bytes: 5000,
                tx_errors: 1
            }
        );
    }

    #[test]
    fn wraps_and_restarts_never_spike() {
        assert_eq!(counter_delta(100, 150, u64::MAX), Some(50));
        // A 32-bit counter wrapped 100 bytes past the top.
        assert_eq!(
            counter_delta(u64::from(u32::MAX) - 49, 50, 1 << 30),
            Some(100)
        );
        // A re-plugged disk restarted from zero: no giant delta.
        assert_eq!(counter_delta(5_000_000, 10, 1 << 20), None);
        // A 64-bit counter cannot wrap in practice: a decrease is a restart.
        assert_eq!(counter_delta(1 << 40, 5, u64::MAX), None);
    }

    #[test]
    fn time_in_state_arithmetic() {
        let old = [(200_000, 100), (1_400_000, 50)];
        let new = [(200_000, 130), (1_400_000, 140)];
        let shares = time_in_state_shares(&old, &new);
        assert_eq!(shares, [(200_000, 0.25), (1_400_000, 0.75)]);
        assert!(time_in_state_shares(&new, &new).is_empty());
        assert_eq!(io_write_bytes("rchar: 1\nwrite_bytes: 4096\n"), Some(4096));
    }
}
