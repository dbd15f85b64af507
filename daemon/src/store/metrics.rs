//! Metric series in SQLite, kept like an RRD: raw samples for 48 hours,
//! 1-minute buckets for 14 days, 15-minute buckets for a year, each bucket
//! with avg/min/max. Samples arrive in batches, so the SD card sees one
//! transaction every few minutes instead of one per sample.

use rusqlite::params;

use super::{Store, StoreError};

pub const RAW_KEEP_SECS: i64 = 48 * 3600;
pub const MINUTE_KEEP_SECS: i64 = 14 * 86_400;
pub const QUARTER_KEEP_SECS: i64 = 365 * 86_400;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Raw,
    Minute,
    Quarter,
}

impl Resolution {
    fn table(self) -> &'static str {
        match self {
            Resolution::Raw => "metric_raw",
            Resolution::Minute => "metric_1m",
            Resolution::Quarter => "metric_15m",
        }
    }
}

/// Samples of one series folded into one time bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub t: i64,
    pub avg: f64,
    pub min: f64,
    pub max: f64,
}

/// A 15-minute bucket's samples added up: a rate series sampled every
/// interval gives what it counted, in intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BucketSum {
    pub t: i64,
    pub sum: f64,
    pub samples: u64,
}

impl Store {
    /// Ids of series keys, made on first use.
    pub fn series_ids(&self, keys: &[&str]) -> Result<Vec<i64>, StoreError> {
        let conn = self.lock();
        let mut insert =
            conn.prepare_cached("INSERT OR IGNORE INTO metric_series (key) VALUES (?1)")?;
        let mut select = conn.prepare_cached("SELECT id FROM metric_series WHERE key = ?1")?;
        let mut ids = Vec::with_capacity(keys.len());
        for key in keys {
            insert.execute([key])?;
            ids.push(select.query_row([key], |row| row.get(0))?);
        }
        Ok(ids)
    }

    pub fn series_keys(&self) -> Result<Vec<(i64, String)>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare("SELECT id, key FROM metric_series ORDER BY key")?;
        let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Writes a batch of (series, time, value) and brings the rollups of
    /// the buckets it touched up to date, in one transaction.
    pub fn add_samples(&self, samples: &[(i64, i64, f64)]) -> Result<(), StoreError> {
        let (Some(first), Some(last)) = (
            samples.iter().map(|s| s.1).min(),
            samples.iter().map(|s| s.1).max(),
        ) else {
            return Ok(());
        };
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR REPLACE INTO metric_raw (series, t, v) VALUES (?1, ?2, ?3)",
            )?;
            for (series, t, v) in samples {
                insert.execute(params![series, t, v])?;
            }
        }
        // Whole buckets are recomputed from the level below, so a bucket
        // that spans two batches comes out right.
        let (m0, m1) = (
            first - first.rem_euclid(60),
            last - last.rem_euclid(60) + 60,
        );
        tx.execute(
            "INSERT OR REPLACE INTO metric_1m (series, t, avg, min, max, n)
             SELECT series, t - (t % 60), avg(v), min(v), max(v), count(*)
             FROM metric_raw WHERE t >= ?1 AND t < ?2 GROUP BY series, t - (t % 60)",
            params![m0, m1],
        )?;
        let (q0, q1) = (
            first - first.rem_euclid(900),
            last - last.rem_euclid(900) + 900,
        );
        tx.execute(
            "INSERT OR REPLACE INTO metric_15m (series, t, avg, min, max, n)
             SELECT series, t - (t % 900), sum(avg * n) / sum(n), min(min), max(max), sum(n)
             FROM metric_1m WHERE t >= ?1 AND t < ?2 GROUP BY series, t - (t % 900)",
            params![q0, q1],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Drops what is older than each level keeps.
    pub fn expire_samples(&self, now: i64) -> Result<(), StoreError> {
        let conn = self.lock();
        conn.execute("DELETE FROM metric_raw WHERE t < ?1", [now - RAW_KEEP_SECS])?;
        conn.execute(
            "DELETE FROM metric_1m WHERE t < ?1",
            [now - MINUTE_KEEP_SECS],
        )?;
        conn.execute(
            "DELETE FROM metric_15m WHERE t < ?1",
            [now - QUARTER_KEEP_SECS],
        )?;
        Ok(())
    }

    /// Buckets of `series` in [from, to], folded into at most `points`
    /// groups of equal width.
    /// Every 15-minute bucket of the series `key` from `from` on (an
    /// unknown series has none).
    pub fn bucket_sums(&self, key: &str, from: i64) -> Result<Vec<BucketSum>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT b.t, b.avg * b.n, b.n FROM metric_15m b JOIN metric_series s ON s.id = b.series
             WHERE s.key = ?1 AND b.t >= ?2 ORDER BY b.t",
        )?;
        let rows = stmt.query_map(params![key, from], |row| {
            Ok(BucketSum {
                t: row.get(0)?,
                sum: row.get(1)?,
                samples: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn query_series(
        &self,
        series: i64,
        resolution: Resolution,
        from: i64,
        to: i64,
        points: u32,
    ) -> Result<Vec<Bucket>, StoreError> {
        // Inclusive range: [from, to] must fold into at most `points` groups.
        let width = (to - from) / i64::from(points.max(1)) + 1;
        let (avg, min, max) = match resolution {
            Resolution::Raw => ("avg(v)", "min(v)", "max(v)"),
            _ => ("sum(avg * n) / sum(n)", "min(min)", "max(max)"),
        };
        let sql = format!(
            "SELECT min(t), {avg}, {min}, {max} FROM {} WHERE series = ?1 AND t >= ?2 AND t <= ?3
             GROUP BY (t - ?2) / ?4 ORDER BY 1",
            resolution.table()
        );
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![series, from, to, width], |row| {
            Ok(Bucket {
                t: row.get(0)?,
                avg: row.get(1)?,
                min: row.get(2)?,
                max: row.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        (dir, store)
    }

    #[test]
    fn bucket_sums_add_up_a_quarter_across_batches() {
        let (_dir, store) = store();
        let id = store.series_ids(&["w{disk=\"sda\"}"]).unwrap()[0];
        store.add_samples(&[(id, 0, 10.0), (id, 10, 20.0)]).unwrap();
        store
            .add_samples(&[(id, 70, 30.0), (id, 900, 5.0)])
            .unwrap();
        let sums = store.bucket_sums("w{disk=\"sda\"}", 0).unwrap();
        assert_eq!(
            sums,
            [
                BucketSum {
                    t: 0,
                    sum: 60.0,
                    samples: 3
                },
                BucketSum {
                    t: 900,
                    sum: 5.0,
                    samples: 1
                }
            ]
        );
        assert!(store.bucket_sums("w{disk=\"sdb\"}", 0).unwrap().is_empty());
        assert_eq!(store.bucket_sums("w{disk=\"sda\"}", 900).unwrap().len(), 1);
    }

    #[test]
    fn rollups_give_the_right_avg_min_max_across_batches() {
        let (_dir, store) = store();
        let id = store.series_ids(&["t{zone=\"a\"}"]).unwrap()[0];
        // Minute 0 gets 10, 20 in one batch and 60 in the next.
        store.add_samples(&[(id, 0, 10.0), (id, 30, 20.0)]).unwrap();
        store
            .add_samples(&[(id, 50, 60.0), (id, 60, 100.0)])
            .unwrap();
        let minutes = store
            .query_series(id, Resolution::Minute, 0, 120, 1000)
            .unwrap();
        assert_eq!(
            minutes[0],
            Bucket {
                t: 0,
                avg: 30.0,
                min: 10.0,
                max: 60.0
            }
        );
        assert_eq!(
            minutes[1],
            Bucket {
                t: 60,
                avg: 100.0,
                min: 100.0,
                max: 100.0
            }
        );
        // The quarter weighs minutes by their sample counts: (10+20+60+100)/4.
        let quarter = store
            .query_series(id, Resolution::Quarter, 0, 900, 10)
            .unwrap();
        assert_eq!(
            quarter,
            [Bucket {
                t: 0,
                avg: 47.5,
                min: 10.0,
                max: 100.0
            }]
        );
    }

    #[test]
    fn queries_fold_into_the_points_asked_for_and_expire() {
        let (_dir, store) = store();
        let id = store.series_ids(&["x"]).unwrap()[0];
        let samples: Vec<_> = (0..100).map(|i| (id, i * 10, i as f64)).collect();
        store.add_samples(&samples).unwrap();
        let folded = store.query_series(id, Resolution::Raw, 0, 990, 10).unwrap();
        assert_eq!(folded.len(), 10);
        assert_eq!((folded[0].min, folded[0].max), (0.0, 9.0));
        store.expire_samples(RAW_KEEP_SECS + 500).unwrap();
        let left = store
            .query_series(id, Resolution::Raw, 0, 990, 1000)
            .unwrap();
        assert_eq!(left.first().map(|b| b.t), Some(500));
        assert_eq!(
            store.series_ids(&["x", "y"]).unwrap()[0],
            id,
            "ids are stable"
        );
    }
}
