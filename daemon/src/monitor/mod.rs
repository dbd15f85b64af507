//! Monitoring: every sampling interval, what the board exposes (CPU
//! frequency and time at each frequency per cluster, temperatures, CPU use,
//! load, memory, disk and network I/O, filesystem fill) goes into a batch in
//! memory; every commit interval the batch becomes one SQLite transaction,
//! so the SD card sees few writes. Queries, Prometheus and events read it.

pub mod alerts;
pub mod card;
pub mod collect;
pub mod collectd;
pub mod parse;
pub mod prometheus;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::disks::Disks;
use crate::host::Host;
use crate::store::{Resolution, Severity, Store, StoreError};
use crate::validate::Invalid;
use alerts::{Alerts, Thresholds};
use collect::{Collector, key};

/// Filesystem fill and USB links change slowly and cost more to read.
const SLOW_EVERY: Duration = Duration::from_secs(60);
const EXPIRE_EVERY: Duration = Duration::from_secs(3600);
const SMART_EVERY: Duration = Duration::from_secs(600);
/// Samples kept in memory when commits keep failing (a full disk): about
/// a day at 10 s for a large board; the oldest go first.
const MAX_BATCH: usize = 1_000_000;
pub const DEFAULT_POINTS: u32 = 800;

#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("no series '{0}'")]
    NoSeries(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A query's answer, in columns (what uPlot takes).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Columns {
    pub series: String,
    /// Seconds between stored samples at the resolution used.
    pub step_secs: i64,
    pub t: Vec<i64>,
    pub avg: Vec<f64>,
    pub min: Vec<f64>,
    pub max: Vec<f64>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct OwnWrites {
    /// Bytes the daemon made the disks write since it started.
    pub written_bytes: u64,
    pub written_bytes_per_hour: f64,
    pub uptime_secs: u64,
}

struct State {
    collector: Collector,
    batch: Vec<(String, i64, f64)>,
    /// The newest value of each series, and when it came.
    latest: BTreeMap<String, (i64, f64)>,
    ids: BTreeMap<String, i64>,
    alerts: Alerts,
    last_smart: Option<Instant>,
}

pub struct Monitor {
    host: Host,
    store: Arc<Store>,
    disks: Arc<Disks>,
    interval: Duration,
    commit_every: Duration,
    state: Mutex<State>,
    started: Instant,
    written_at_start: u64,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Monitor {
    pub fn new(
        host: Host,
        store: Arc<Store>,
        disks: Arc<Disks>,
        interval: Duration,
        commit_every: Duration,
    ) -> Self {
        let written_at_start = own_written(&host);
        Self {
            host,
            store,
            disks,
            interval,
            commit_every,
            state: Mutex::new(State {
                collector: Collector::default(),
                batch: Vec::new(),
                latest: BTreeMap::new(),
                ids: BTreeMap::new(),
                alerts: Alerts::new(Thresholds::default()),
                last_smart: None,
            }),
            started: Instant::now(),
            written_at_start,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Samples until the task is dropped. One sample at a time: if reading
    /// the host ever blocks, the next tick waits instead of piling up.
    pub async fn run(self: Arc<Self>) {
        let mut ticker = tokio::time::interval(self.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let (mut last_sample, mut last_commit) = (None::<Instant>, Instant::now());
        let (mut last_slow, mut last_expire) = (None::<Instant>, Instant::now());
        loop {
            ticker.tick().await;
            let secs = last_sample.map(|t: Instant| t.elapsed().as_secs_f64());
            last_sample = Some(Instant::now());
            let me = self.clone();
            match tokio::task::spawn_blocking(move || me.sample(secs)).await {
                Ok(Err(err)) => tracing::warn!("monitoring sample: {err}"),
                Err(err) => tracing::warn!("monitoring sample: {err}"),
                Ok(Ok(())) => {}
            }
            if last_slow.is_none_or(|t| t.elapsed() >= SLOW_EVERY) {
                last_slow = Some(Instant::now());
                self.sample_disks().await;
            }
            // SQLite work (on an SD card, slow) off the async threads.
            if last_commit.elapsed() >= self.commit_every {
                last_commit = Instant::now();
                let me = self.clone();
                if let Ok(Err(err)) = tokio::task::spawn_blocking(move || me.commit()).await {
                    tracing::error!("monitoring commit: {err}");
                }
            }
            if last_expire.elapsed() >= EXPIRE_EVERY {
                last_expire = Instant::now();
                let store = self.store.clone();
                if let Ok(Err(err)) =
                    tokio::task::spawn_blocking(move || store.expire_samples(now())).await
                {
                    tracing::error!("monitoring retention: {err}");
                }
            }
        }
    }

    fn sample(&self, secs: Option<f64>) -> Result<(), crate::host::HostError> {
        let mut state = self.lock();
        let values = state.collector.sample(&self.host, secs)?;
        self.record(&mut state, values);
        Ok(())
    }

    fn record(&self, state: &mut State, values: Vec<(String, f64)>) {
        let t = now();
        for (series, value) in values {
            if series.starts_with("temperature_celsius")
                && let Some(message) = state.alerts.temperature(&series, value, t)
            {
                self.event(&message);
            }
            state.latest.insert(series.clone(), (t, value));
            state.batch.push((series, t, value));
        }
        if state.batch.len() > MAX_BATCH {
            let excess = state.batch.len() - MAX_BATCH;
            state.batch.drain(..excess);
            tracing::warn!("monitoring: {excess} samples dropped, the database does not take them");
        }
        // A gauge of a device or sensor that is gone stops being shown.
        let stale_before = t - 3 * self.interval.as_secs().max(60) as i64;
        state.latest.retain(|_, (seen, _)| *seen >= stale_before);
    }

    /// Disk temperatures from SMART, for disks without a drivetemp sensor
    /// (USB bridges): `-n standby` leaves a sleeping disk asleep.
    async fn sample_smart_temperatures(&self, list: &crate::disks::DiskList) {
        let has_drivetemp = crate::inventory::collect(&self.host)
            .map(|info| {
                info.hwmon
                    .iter()
                    .any(|s| s.name.as_deref() == Some("drivetemp"))
            })
            .unwrap_or(false);
        if has_drivetemp {
            return;
        }
        let mut values = Vec::new();
        for disk in list.disks.iter().filter(|d| d.rotational && !d.system) {
            if let Ok(report) = self.disks.smart(&disk.volume.name).await
                && let Some(celsius) = report.temperature_celsius
            {
                let sensor = format!("smart/{}", disk.volume.name);
                values.push((
                    key(
                        "temperature_celsius",
                        &[("sensor", &sensor), ("type", "disk")],
                    ),
                    celsius as f64,
                ));
            }
        }
        let mut state = self.lock();
        self.record(&mut state, values);
    }

    /// Filesystem fill and USB link speed, from the disks module (which
    /// guards every call that could block on a dead disk).
    async fn sample_disks(&self) {
        let list = match self.disks.list().await {
            Ok(list) => list,
            Err(err) => {
                tracing::warn!("monitoring disks: {err}");
                return;
            }
        };
        if self.smart_due() {
            self.sample_smart_temperatures(&list).await;
        }
        let mut values = Vec::new();
        let mut state = self.lock();
        for disk in &list.disks {
            if let Some(message) =
                state
                    .alerts
                    .usb_link(&disk.volume.name, disk.usb_degraded, disk.usb_speed_mbps)
            {
                self.event(&message);
            }
            let volumes =
                std::iter::once(&disk.volume).chain(disk.partitions.iter().map(|p| &p.volume));
            for v in volumes {
                let (Some(mountpoint), Some(usage)) = (&v.mountpoint, v.usage) else {
                    continue;
                };
                if usage.total_bytes == 0 {
                    continue;
                }
                let ratio = usage.used_bytes as f64 / usage.total_bytes as f64;
                if let Some(message) = state.alerts.filesystem(mountpoint, ratio) {
                    self.event(&message);
                }
                values.push((
                    key("filesystem_used_ratio", &[("mountpoint", mountpoint)]),
                    ratio,
                ));
            }
        }
        self.record(&mut state, values);
    }

    /// SMART is asked every ten minutes at most.
    fn smart_due(&self) -> bool {
        let mut state = self.lock();
        let due = state.last_smart.is_none_or(|t| t.elapsed() >= SMART_EVERY);
        if due {
            state.last_smart = Some(Instant::now());
        }
        due
    }

    fn event(&self, message: &str) {
        tracing::warn!("{message}");
        if let Err(err) = self
            .store
            .add_event("monitor", Severity::Warning, now(), message)
        {
            tracing::error!("event not stored: {err}");
        }
    }

    /// Writes the batch in one transaction.
    pub fn commit(&self) -> Result<(), StoreError> {
        let batch = std::mem::take(&mut self.lock().batch);
        if batch.is_empty() {
            return Ok(());
        }
        let mut ids = self.lock().ids.clone();
        let missing: Vec<&str> = batch
            .iter()
            .map(|(k, _, _)| k.as_str())
            .filter(|k| !ids.contains_key(*k))
            .collect();
        let mut missing = missing;
        missing.sort_unstable();
        missing.dedup();
        for (k, id) in missing.iter().zip(self.store.series_ids(&missing)?) {
            ids.insert((*k).to_owned(), id);
        }
        let rows: Vec<(i64, i64, f64)> = batch
            .iter()
            .filter_map(|(k, t, v)| Some((*ids.get(k)?, *t, *v)))
            .collect();
        let result = self.store.add_samples(&rows);
        let mut state = self.lock();
        state.ids = ids;
        if result.is_err() {
            // Kept for the next try rather than lost.
            let mut newer = std::mem::take(&mut state.batch);
            state.batch = batch;
            state.batch.append(&mut newer);
        }
        result
    }

    pub fn series(&self) -> Result<Vec<String>, MonitorError> {
        let mut keys: Vec<String> = self
            .store
            .series_keys()?
            .into_iter()
            .map(|(_, k)| k)
            .collect();
        for k in self.lock().latest.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        keys.sort();
        Ok(keys)
    }

    /// `series` between `from` and `to` in at most `points` points, from
    /// the coarsest level that still has that many.
    pub fn query(
        &self,
        series: &str,
        from: i64,
        to: i64,
        points: u32,
    ) -> Result<Columns, MonitorError> {
        // Unix seconds between 1970 and 2100: no arithmetic on them overflows.
        const LAST: i64 = 4_102_444_800;
        if !(0..=LAST).contains(&from) || !(0..=LAST).contains(&to) {
            return Err(Invalid::new(
                "from",
                "from and to must be Unix times between 1970 and 2100",
            )
            .into());
        }
        if to <= from {
            return Err(Invalid::new("to", "must be after from").into());
        }
        if !(1..=10_000).contains(&points) {
            return Err(Invalid::new("points", "must be 1 to 10000").into());
        }
        let raw_step = self.interval.as_secs().max(1) as i64;
        let (resolution, step) = pick_resolution(to - from, points, raw_step);
        let id = self
            .store
            .series_keys()?
            .into_iter()
            .find(|(_, k)| k == series)
            .map(|(id, _)| id);
        let mut buckets = match id {
            Some(id) => self.store.query_series(id, resolution, from, to, points)?,
            None => Vec::new(),
        };
        if resolution == Resolution::Raw {
            // Samples not committed yet are the newest: show them too.
            let state = self.lock();
            buckets.extend(
                state
                    .batch
                    .iter()
                    .filter(|(k, t, _)| k == series && (from..=to).contains(t))
                    .map(|(_, t, v)| crate::store::Bucket {
                        t: *t,
                        avg: *v,
                        min: *v,
                        max: *v,
                    }),
            );
        }
        if id.is_none() && buckets.is_empty() && !self.lock().latest.contains_key(series) {
            return Err(MonitorError::NoSeries(series.to_owned()));
        }
        Ok(Columns {
            series: series.to_owned(),
            step_secs: step,
            t: buckets.iter().map(|b| b.t).collect(),
            avg: buckets.iter().map(|b| b.avg).collect(),
            min: buckets.iter().map(|b| b.min).collect(),
            max: buckets.iter().map(|b| b.max).collect(),
        })
    }

    pub fn prometheus(&self) -> String {
        let state = self.lock();
        let latest: BTreeMap<String, f64> = state
            .latest
            .iter()
            .map(|(k, (_, v))| (k.clone(), *v))
            .collect();
        prometheus::render(&latest, &state.collector.counters)
    }

    /// What `disk` (the system disk) was written per local day over the
    /// last `days` days.
    pub fn card_writes(
        &self,
        disk: Option<String>,
        days: u32,
    ) -> Result<card::CardWrites, MonitorError> {
        if !(1..=365).contains(&days) {
            return Err(Invalid::new("days", "must be 1 to 365").into());
        }
        let buckets = match &disk {
            Some(name) => self.store.bucket_sums(
                &key("disk_write_bytes_per_second", &[("disk", name)]),
                now() - i64::from(days) * 86_400,
            )?,
            None => Vec::new(),
        };
        let zone = jiff::tz::TimeZone::system();
        Ok(card::per_day(
            disk,
            &buckets,
            self.interval.as_secs().max(1),
            &zone,
        ))
    }

    pub fn own_writes(&self) -> OwnWrites {
        let written = own_written(&self.host).saturating_sub(self.written_at_start);
        let uptime = self.started.elapsed().as_secs_f64();
        OwnWrites {
            written_bytes: written,
            written_bytes_per_hour: if uptime > 0.0 {
                written as f64 * 3600.0 / uptime
            } else {
                0.0
            },
            uptime_secs: uptime as u64,
        }
    }
}

/// The coarsest level that still has `points` buckets in `span` seconds
/// (raw samples when none does), and its step.
pub fn pick_resolution(span: i64, points: u32, raw_step: i64) -> (Resolution, i64) {
    [(Resolution::Quarter, 900), (Resolution::Minute, 60)]
        .into_iter()
        .find(|(_, step)| span / step >= i64::from(points))
        .unwrap_or((Resolution::Raw, raw_step))
}

fn own_written(host: &Host) -> u64 {
    host.own_io()
        .ok()
        .flatten()
        .and_then(|t| parse::io_write_bytes(&t))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_use_the_coarsest_level_that_still_has_the_points() {
        // An hour at 800 points needs 4.5 s steps: raw samples.
        assert_eq!(pick_resolution(3600, 800, 10), (Resolution::Raw, 10));
        // A day: 1440 minutes are enough for 800 points.
        assert_eq!(pick_resolution(86_400, 800, 10), (Resolution::Minute, 60));
        // A year: quarters.
        assert_eq!(
            pick_resolution(365 * 86_400, 800, 10),
            (Resolution::Quarter, 900)
        );
        // A week at 800 points: 672 quarters are too few, 10080 minutes do.
        assert_eq!(
            pick_resolution(7 * 86_400, 800, 10),
            (Resolution::Minute, 60)
        );
    }
}
