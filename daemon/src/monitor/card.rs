//! What the system disk (the SD card on a board) is written, per day: a
//! card wears out by the bytes written to it, so the owner sees what the
//! system costs it. Worked out from the stored write-rate series, so it
//! covers the time nasd was sampling, and lags by up to a commit interval.

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde::Serialize;

use crate::store::BucketSum;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CardWrites {
    /// The disk that holds the running system; none on a fixture tree.
    pub disk: Option<String>,
    /// Local dates, oldest first; days without samples are left out.
    pub days: Vec<DayWrites>,
    /// Bytes per day of sampling: the total over the time measured, so a
    /// first or a partial day does not pull it down.
    pub mean_bytes_per_day: Option<u64>,
    pub measured_secs: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DayWrites {
    pub date: String,
    pub written_bytes: u64,
}

/// Folds 15-minute sums of a bytes-per-second series sampled every
/// `interval_secs` into local days of `zone`.
pub fn per_day(
    disk: Option<String>,
    buckets: &[BucketSum],
    interval_secs: u64,
    zone: &TimeZone,
) -> CardWrites {
    let mut days: Vec<(Date, f64)> = Vec::new();
    let (mut total, mut samples) = (0.0, 0u64);
    for bucket in buckets {
        let Ok(at) = Timestamp::from_second(bucket.t) else {
            continue;
        };
        let date = at.to_zoned(zone.clone()).date();
        let bytes = bucket.sum.max(0.0) * interval_secs as f64;
        match days.last_mut() {
            Some((last, sum)) if *last == date => *sum += bytes,
            _ => days.push((date, bytes)),
        }
        total += bytes;
        samples += bucket.samples;
    }
    let measured_secs = samples * interval_secs;
    CardWrites {
        disk,
        days: days
            .into_iter()
            .map(|(date, bytes)| DayWrites {
                date: date.to_string(),
                written_bytes: bytes.round() as u64,
            })
            .collect(),
        mean_bytes_per_day: (measured_secs > 0)
            .then(|| (total * 86_400.0 / measured_secs as f64).round() as u64),
        measured_secs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(t: i64, sum: f64, samples: u64) -> BucketSum {
        BucketSum { t, sum, samples }
    }

    #[test]
    fn buckets_fold_into_local_days() {
        let zone = TimeZone::get("Europe/Berlin").unwrap();
        // 2026-11-29 22:45 UTC is 23:45 in Berlin; 23:00 UTC is already the 30th.
        let late = 1_795_992_300;
        let buckets = [
            bucket(late, 90.0, 90),
            bucket(late + 900, 9.0, 90),
            bucket(late + 1800, 1.0, 90),
        ];
        let writes = per_day(Some("mmcblk0".into()), &buckets, 10, &zone);
        assert_eq!(
            writes.days,
            [
                DayWrites {
                    date: "2026-11-29".into(),
                    written_bytes: 900
                },
                DayWrites {
                    date: "2026-11-30".into(),
                    written_bytes: 100
                },
            ]
        );
        // 1000 bytes in 2700 s of sampling.
        assert_eq!(writes.measured_secs, 2700);
        assert_eq!(writes.mean_bytes_per_day, Some(32_000));
    }

    #[test]
    fn nothing_measured_has_no_mean() {
        let writes = per_day(None, &[], 10, &TimeZone::UTC);
        assert!(writes.days.is_empty());
        assert_eq!(writes.mean_bytes_per_day, None);
    }
}
