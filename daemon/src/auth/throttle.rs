//! Slows password guessing from one address: a few free tries, then each
//! further failure doubles the wait before the next attempt, up to a cap.
//! Keyed by client address rather than username, so nobody can lock the
//! administrator out by failing on purpose from elsewhere.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const FREE_FAILURES: u32 = 5;
const MAX_WAIT: Duration = Duration::from_secs(15 * 60);
/// Entries idle this long are forgotten, so the map cannot grow without bound.
const FORGET_AFTER: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

#[derive(Debug, Default)]
pub struct LoginThrottle {
    failures: Mutex<HashMap<IpAddr, Failures>>,
}

fn wait_after(count: u32) -> Duration {
    if count < FREE_FAILURES {
        return Duration::ZERO;
    }
    let doublings = (count - FREE_FAILURES).min(16);
    Duration::from_secs(1u64 << doublings).min(MAX_WAIT)
}

impl LoginThrottle {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Failures>> {
        self.failures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts an attempt from `ip`: `Err(wait)` when it must wait first;
    /// otherwise the attempt counts as a failure until [`succeeded`] says
    /// otherwise. Checking and counting are one step, so parallel guesses
    /// cannot all slip through on one free try.
    ///
    /// [`succeeded`]: LoginThrottle::succeeded
    pub fn begin(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let mut map = self.lock();
        map.retain(|_, f| now.saturating_duration_since(f.last) < FORGET_AFTER);
        if let Some(f) = map.get(&ip) {
            let ready_at = f.last + wait_after(f.count);
            if now < ready_at {
                return Err(ready_at - now);
            }
        }
        let entry = map.entry(ip).or_insert(Failures {
            count: 0,
            last: now,
        });
        entry.count = entry.count.saturating_add(1);
        entry.last = now;
        Ok(())
    }

    pub fn succeeded(&self, ip: IpAddr) {
        self.lock().remove(&ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ATTACKER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const ADMIN: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn free_tries_then_doubling_waits_for_that_address_only() {
        let throttle = LoginThrottle::default();
        let t0 = Instant::now();
        for _ in 0..FREE_FAILURES {
            assert_eq!(throttle.begin(ATTACKER, t0), Ok(()));
        }
        assert_eq!(throttle.begin(ATTACKER, t0), Err(Duration::from_secs(1)));
        assert_eq!(throttle.begin(ADMIN, t0), Ok(()));
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(throttle.begin(ATTACKER, t1), Ok(()));
        assert_eq!(throttle.begin(ATTACKER, t1), Err(Duration::from_secs(2)));
    }

    #[test]
    fn waits_are_capped_and_success_forgives() {
        assert_eq!(wait_after(1000), MAX_WAIT);
        let throttle = LoginThrottle::default();
        let now = Instant::now();
        let mut at = now;
        for _ in 0..50 {
            at += MAX_WAIT;
            assert_eq!(throttle.begin(ATTACKER, at), Ok(()));
        }
        assert_eq!(throttle.begin(ATTACKER, at), Err(MAX_WAIT));
        throttle.succeeded(ATTACKER);
        assert_eq!(throttle.begin(ATTACKER, at), Ok(()));
    }

    #[test]
    fn idle_entries_are_forgotten() {
        let throttle = LoginThrottle::default();
        let t0 = Instant::now();
        throttle.begin(ATTACKER, t0).unwrap();
        throttle.begin(ADMIN, t0 + FORGET_AFTER).unwrap();
        assert_eq!(throttle.lock().len(), 1);
    }
}
