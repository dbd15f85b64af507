//! Scheduled self-tests: cron schedules of disk and network benchmarks,
//! SMART self-tests, health checks and store upkeep, run through one queue
//! for heavy jobs, with a history, regression events and notifications.
//!
//! `Scheduler` keeps the schedules and the timetable, expands a job for
//! `all` disks into one run per disk, waits while the board is hot or busy,
//! runs each job with its timeout and a cancel switch, and records it.

pub mod cron;
pub mod health;
pub mod model;
pub mod notify;
pub mod plan;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::bench::disk::{self, DiskBench, DiskRequest};
use crate::bench::net::NetBench;
use crate::disks::smart::{SmartState, device_type};
use crate::disks::{Disk, Disks};
use crate::host::Host;
use crate::inventory;
use crate::store::{JobRunRow, Severity, Store, StoreError};
use crate::tuning::Tuner;
use crate::validate::Invalid;
use cron::Cron;
use model::{Job, JobRun, JobStatus, Schedule, ScheduleRequest, SmartTest, WhenAsleep, WhenBusy};
use plan::{Gate, Timetable};

/// A heavy job that must wait re-checks the board this often.
const RECHECK: Duration = Duration::from_secs(60);
/// A running SMART self-test is polled this often.
const SMART_POLL: Duration = Duration::from_secs(60);
/// Runs of the same job a result is compared with (their median).
const BASELINE_RUNS: u32 = 5;
/// VACUUM when at least this share of the database file is free pages.
const VACUUM_FREE_SHARE: f64 = 0.25;
const VACUUM_MIN_BYTES: u64 = 4 << 20;
const SEEDED_KEY: &str = "schedules_seeded";

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no schedule #{0}")]
    NotFound(i64),
    #[error("no job run #{0}")]
    JobNotFound(i64),
    #[error("job run #{0} is not queued or running")]
    NotRunning(i64),
    #[error("stored {what} #{id} is unreadable: {message}")]
    Corrupt {
        what: &'static str,
        id: i64,
        message: String,
    },
}

/// A schedule as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ScheduleView {
    #[serde(flatten)]
    pub schedule: Schedule,
    pub last_run_at: Option<i64>,
    /// The next three runs in the local time zone (RFC 3339 with the zone).
    pub next_runs: Vec<String>,
    pub time_zone: String,
}

/// How a job ended.
struct Outcome {
    status: JobStatus,
    message: String,
    output: Value,
}

impl Outcome {
    fn new(status: JobStatus, message: impl Into<String>, output: Value) -> Self {
        Outcome {
            status,
            message: message.into(),
            output,
        }
    }

    fn skipped(message: impl Into<String>) -> Self {
        Outcome::new(JobStatus::Skipped, message, Value::Null)
    }
}

/// What must be stopped when a job is cancelled or times out, besides
/// dropping its future (which kills the programs it spawned).
#[derive(Debug, Clone)]
enum Cleanup {
    DiskRun(i64),
    SelfTest(String),
}

pub struct Deps {
    pub host: Host,
    pub store: Arc<Store>,
    pub disks: Arc<Disks>,
    pub disk_bench: Arc<DiskBench>,
    pub net: Arc<NetBench>,
    pub tuner: Arc<Tuner>,
}

pub struct Scheduler {
    deps: Deps,
    zone: TimeZone,
    zone_name: String,
    regression_percent: u8,
    /// Heavy jobs run one at a time, in the order they were queued.
    heavy: tokio::sync::Mutex<()>,
    /// Cancel switches of queued and running jobs.
    running: Mutex<HashMap<i64, watch::Sender<bool>>>,
    table: Mutex<Timetable>,
    changed: tokio::sync::Notify,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn unix_now() -> i64 {
    Timestamp::now().as_second()
}

/// The disk a job names: by kernel name or serial.
fn find_disk<'a>(disks: &'a [Disk], name: &str) -> Option<&'a Disk> {
    disks
        .iter()
        .find(|d| d.volume.name == name || d.serial.as_deref() == Some(name))
}

/// Where a disk's data is mounted (its own filesystem or a partition's).
fn data_mountpoint(disk: &Disk) -> Option<String> {
    std::iter::once(&disk.volume)
        .chain(disk.partitions.iter().map(|p| &p.volume))
        .find_map(|v| v.mountpoint.clone())
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

impl Scheduler {
    /// Schedules run in the system's time zone (jiff reads TZ, then
    /// /etc/localtime).
    pub fn new(deps: Deps, regression_percent: u8) -> Self {
        let zone = TimeZone::system();
        let zone_name = zone.iana_name().unwrap_or("UTC").to_owned();
        Scheduler {
            deps,
            zone,
            zone_name,
            regression_percent,
            heavy: tokio::sync::Mutex::new(()),
            running: Mutex::default(),
            table: Mutex::default(),
            changed: tokio::sync::Notify::new(),
        }
    }

    pub fn zone(&self) -> TimeZone {
        self.zone.clone()
    }

    fn cron(&self, text: &str) -> Result<Cron, Invalid> {
        Cron::parse(text, &self.zone_name)
    }

    /// The next `n` run times of `cron`, as the editor previews them.
    pub fn preview(&self, cron: &str, n: usize) -> Result<Vec<String>, Invalid> {
        Ok(self
            .cron(cron)?
            .next_runs(Timestamp::now(), n)
            .iter()
            .map(ToString::to_string)
            .collect())
    }

    /// A schedule with its next three runs (none when disabled).
    fn view(&self, schedule: Schedule, last_run_at: Option<i64>) -> ScheduleView {
        let next_runs = match self.cron(&schedule.cron) {
            Ok(cron) if schedule.enabled => cron
                .next_runs(Timestamp::now(), 3)
                .iter()
                .map(ToString::to_string)
                .collect(),
            _ => Vec::new(),
        };
        ScheduleView {
            schedule,
            last_run_at,
            next_runs,
            time_zone: self.zone_name.clone(),
        }
    }

    fn stored(&self) -> Result<Vec<(Schedule, Option<i64>)>, ScheduleError> {
        self.deps
            .store
            .schedules()?
            .into_iter()
            .map(|(id, doc, last)| {
                let schedule: Schedule =
                    serde_json::from_str(&doc).map_err(|e| ScheduleError::Corrupt {
                        what: "schedule",
                        id,
                        message: e.to_string(),
                    })?;
                Ok((schedule, last))
            })
            .collect()
    }

    pub fn list(&self) -> Result<Vec<ScheduleView>, ScheduleError> {
        Ok(self
            .stored()?
            .into_iter()
            .map(|(s, last)| self.view(s, last))
            .collect())
    }

    pub fn get(&self, id: i64) -> Result<ScheduleView, ScheduleError> {
        let (doc, last) = self
            .deps
            .store
            .schedule(id)?
            .ok_or(ScheduleError::NotFound(id))?;
        let schedule: Schedule =
            serde_json::from_str(&doc).map_err(|e| ScheduleError::Corrupt {
                what: "schedule",
                id,
                message: e.to_string(),
            })?;
        Ok(self.view(schedule, last))
    }

    /// Checks a request completely before anything is stored.
    fn checked(
        &self,
        request: ScheduleRequest,
        id: i64,
        created_at: i64,
    ) -> Result<(Schedule, Cron), ScheduleError> {
        let cron = self.cron(&request.cron)?;
        let schedule = request.into_schedule(id, created_at)?;
        Ok((schedule, cron))
    }

    pub fn add(&self, request: ScheduleRequest) -> Result<ScheduleView, ScheduleError> {
        let now = unix_now();
        let (mut schedule, cron) = self.checked(request, 0, now)?;
        let store = &self.deps.store;
        schedule.id = store.add_schedule(&to_json(&schedule))?;
        store.put_schedule(schedule.id, &to_json(&schedule))?;
        locked(&self.table).set(&schedule, cron, Timestamp::now());
        self.changed.notify_one();
        Ok(self.view(schedule, None))
    }

    pub fn update(&self, id: i64, request: ScheduleRequest) -> Result<ScheduleView, ScheduleError> {
        let current = self.get(id)?;
        let (schedule, cron) = self.checked(request, id, current.schedule.created_at)?;
        if !self.deps.store.put_schedule(id, &to_json(&schedule))? {
            return Err(ScheduleError::NotFound(id));
        }
        locked(&self.table).set(&schedule, cron, Timestamp::now());
        self.changed.notify_one();
        self.get(id)
    }

    pub fn remove(&self, id: i64) -> Result<(), ScheduleError> {
        if !self.deps.store.remove_schedule(id)? {
            return Err(ScheduleError::NotFound(id));
        }
        locked(&self.table).remove(id);
        self.changed.notify_one();
        Ok(())
    }

    /// A fresh install's schedules, once: a weekly SMART short test and a
    /// monthly long one of every disk, a nightly health check, a weekly
    /// quick benchmark of every data disk, weekly store upkeep.
    pub fn seed_defaults(&self) -> Result<(), ScheduleError> {
        if self.deps.store.setting(SEEDED_KEY)?.is_some() {
            return Ok(());
        }
        let defaults = [
            (
                "SMART short test, every disk",
                "0 3 * * 0",
                json!({"kind": "smart_test", "disk": "all", "test": "short"}),
                true,
            ),
            (
                "SMART long test, every disk",
                "0 1 1 * *",
                json!({"kind": "smart_test", "disk": "all", "test": "long"}),
                true,
            ),
            (
                "Health check",
                "30 4 * * *",
                json!({"kind": "health_check"}),
                true,
            ),
            (
                "Quick disk benchmark, every data disk",
                "0 5 * * 6",
                json!({"kind": "disk_benchmark", "disk": "all", "preset": "quick"}),
                false,
            ),
            (
                "Store upkeep",
                "0 4 * * 0",
                json!({"kind": "maintenance"}),
                true,
            ),
        ];
        for (name, cron, job, catch_up) in defaults {
            let request: ScheduleRequest = serde_json::from_value(json!({
                "name": name, "cron": cron, "job": job, "catch_up": catch_up
            }))
            .map_err(|e| Invalid::new("job", e.to_string()))?;
            self.add(request)?;
        }
        self.deps.store.put_setting(SEEDED_KEY, "1")?;
        Ok(())
    }

    /// Runs the schedules until the process ends: marks what a stop
    /// interrupted, catches up missed runs once, then fires each schedule
    /// at its time.
    pub async fn run(self: Arc<Self>) {
        if let Err(err) = self.mark_interrupted() {
            tracing::error!("job history: {err}");
        }
        let schedules = match self.stored() {
            Ok(s) => s,
            Err(err) => {
                tracing::error!("schedules not loaded: {err}");
                return;
            }
        };
        let with_cron: Vec<(Schedule, Cron, Option<i64>)> = schedules
            .into_iter()
            .filter_map(|(s, last)| {
                let cron = self.cron(&s.cron).ok()?;
                Some((s, cron, last))
            })
            .collect();
        let (table, catch_up) = Timetable::at_start(&with_cron, Timestamp::now());
        *locked(&self.table) = table;
        for missed in catch_up {
            tracing::info!(
                "schedule #{} missed its run at {}; running it once now",
                missed.schedule_id,
                missed.missed_at
            );
            let _ = self.fire(missed.schedule_id);
        }
        loop {
            let due = locked(&self.table).due(Timestamp::now());
            for id in due {
                if let Err(err) = self.fire(id) {
                    tracing::error!("schedule #{id}: {err}");
                }
            }
            let wait = locked(&self.table)
                .next_due()
                .map(|next| next.duration_since(Timestamp::now()))
                .and_then(|span| Duration::try_from(span).ok())
                .unwrap_or(Duration::from_secs(60))
                .min(Duration::from_secs(60));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.changed.notified() => {}
            }
        }
    }

    fn mark_interrupted(&self) -> Result<(), ScheduleError> {
        let store = &self.deps.store;
        for status in [JobStatus::Queued, JobStatus::Running] {
            for id in store.job_runs_with_status(status.as_str())? {
                let Ok(mut run) = self.job(id) else { continue };
                run.status = JobStatus::Interrupted;
                run.finished_at = Some(unix_now());
                run.message = "nasd stopped while it was queued or running".into();
                store.update_job_run(id, run.status.as_str(), &to_json(&run))?;
            }
        }
        Ok(())
    }

    /// Runs a schedule now (in the background); returns its job runs.
    pub fn run_now(self: &Arc<Self>, id: i64) -> Result<Vec<i64>, ScheduleError> {
        Ok(self.fire(id)?.into_iter().map(|(id, _)| id).collect())
    }

    /// Queues the runs of a schedule (one per disk for `all`) and starts
    /// them; the handles end when the runs do.
    pub fn fire(
        self: &Arc<Self>,
        id: i64,
    ) -> Result<Vec<(i64, tokio::task::JoinHandle<()>)>, ScheduleError> {
        let view = self.get(id)?;
        let schedule = view.schedule;
        self.deps.store.set_schedule_ran(id, unix_now())?;
        let me = self.clone();
        let jobs = match schedule.job.disk() {
            Some("all") => None,
            _ => Some(vec![schedule.job.clone()]),
        };
        let mut started = Vec::new();
        match jobs {
            Some(jobs) => {
                for job in jobs {
                    started.push(me.queue(Some(&schedule), job)?);
                }
            }
            None => {
                // Expanded when the disks are known: queued as one run that
                // becomes one per disk.
                let run_id = self.record_new(Some(&schedule), &schedule.job)?;
                let me = self.clone();
                let schedule = schedule.clone();
                let (tx, rx) = watch::channel(false);
                locked(&self.running).insert(run_id, tx);
                let handle = tokio::spawn(async move {
                    me.expand_all(run_id, schedule, rx).await;
                });
                started.push((run_id, handle));
            }
        }
        Ok(started)
    }

    fn queue(
        self: &Arc<Self>,
        schedule: Option<&Schedule>,
        job: Job,
    ) -> Result<(i64, tokio::task::JoinHandle<()>), ScheduleError> {
        let run_id = self.record_new(schedule, &job)?;
        let (tx, rx) = watch::channel(false);
        locked(&self.running).insert(run_id, tx);
        let me = self.clone();
        let schedule = schedule.cloned();
        let handle = tokio::spawn(async move {
            me.execute(run_id, schedule, job, rx).await;
        });
        Ok((run_id, handle))
    }

    /// `all`: one run per disk that can take the job; this run records how
    /// it was expanded, or why there was nothing to do.
    async fn expand_all(
        self: Arc<Self>,
        run_id: i64,
        schedule: Schedule,
        _cancel: watch::Receiver<bool>,
    ) {
        let list = match self.deps.disks.list().await {
            Ok(list) => list,
            Err(err) => {
                self.finish(
                    run_id,
                    Outcome::new(
                        JobStatus::Failed,
                        format!("cannot list disks: {err}"),
                        Value::Null,
                    ),
                    None,
                );
                return;
            }
        };
        let names: Vec<String> = list
            .disks
            .iter()
            .filter(|d| !d.system)
            .filter(|d| match schedule.job {
                Job::SmartTest { .. } => device_type(d.transport).is_some(),
                _ => data_mountpoint(d).is_some(),
            })
            .map(|d| d.volume.name.clone())
            .collect();
        if names.is_empty() {
            let why = match schedule.job {
                Job::SmartTest { .. } => "no disk here has SMART",
                _ => "no data disk is mounted",
            };
            self.finish(run_id, Outcome::skipped(why), None);
            return;
        }
        let mut handles = Vec::new();
        let mut ids = Vec::new();
        for name in &names {
            match self.queue(Some(&schedule), schedule.job.for_disk(name)) {
                Ok((id, handle)) => {
                    ids.push(id);
                    handles.push(handle);
                }
                Err(err) => tracing::error!("schedule #{}: {err}", schedule.id),
            }
        }
        self.finish(
            run_id,
            Outcome::new(
                JobStatus::Ok,
                format!("queued one run per disk: {}", names.join(", ")),
                json!({"runs": ids}),
            ),
            None,
        );
        for handle in handles {
            let _ = handle.await;
        }
    }

    fn record_new(&self, schedule: Option<&Schedule>, job: &Job) -> Result<i64, ScheduleError> {
        let run = JobRun {
            id: 0,
            schedule_id: schedule.map(|s| s.id),
            schedule_name: schedule.map(|s| s.name.clone()),
            job: job.clone(),
            status: JobStatus::Queued,
            queued_at: unix_now(),
            started_at: None,
            finished_at: None,
            duration_secs: None,
            message: "queued".into(),
            output: Value::Null,
        };
        let row = JobRunRow {
            schedule_id: run.schedule_id,
            kind: job.kind().into(),
            target: job.target(),
            started_at: run.queued_at,
            status: run.status.as_str().into(),
        };
        let store = &self.deps.store;
        let id = store.add_job_run(&row, &to_json(&run))?;
        store.update_job_run(id, run.status.as_str(), &to_json(&JobRun { id, ..run }))?;
        Ok(id)
    }

    fn update_run(&self, id: i64, change: impl FnOnce(&mut JobRun)) {
        let Ok(mut run) = self.job(id) else { return };
        change(&mut run);
        if let Err(err) = self
            .deps
            .store
            .update_job_run(id, run.status.as_str(), &to_json(&run))
        {
            tracing::error!("job run #{id} not recorded: {err}");
        }
    }

    fn finish(&self, id: i64, outcome: Outcome, started: Option<std::time::Instant>) {
        locked(&self.running).remove(&id);
        let mut failed_event = None;
        self.update_run(id, |run| {
            run.status = outcome.status;
            run.message = outcome.message.clone();
            run.output = outcome.output.clone();
            run.finished_at = Some(unix_now());
            run.duration_secs = started.map(|t| t.elapsed().as_secs_f64());
            if matches!(outcome.status, JobStatus::Failed | JobStatus::Timeout) {
                failed_event = Some(format!(
                    "job #{id} {} ({}) {}: {}",
                    run.job.kind(),
                    run.job.target(),
                    outcome.status.as_str(),
                    outcome.message
                ));
            }
        });
        if let Some(message) = failed_event {
            self.event(Severity::Warning, &message);
        }
    }

    fn event(&self, severity: Severity, message: &str) {
        tracing::warn!("{message}");
        if let Err(err) = self
            .deps
            .store
            .add_event("schedule", severity, unix_now(), message)
        {
            tracing::error!("event not stored: {err}");
        }
    }

    /// Waits its turn (heavy jobs), for a cool calm board, then runs the
    /// job under its timeout and cancel switch.
    async fn execute(
        self: Arc<Self>,
        id: i64,
        schedule: Option<Schedule>,
        job: Job,
        mut cancel: watch::Receiver<bool>,
    ) {
        let timeout = Duration::from_secs(
            schedule
                .as_ref()
                .map_or_else(|| job.default_timeout_secs(), |s| s.timeout_secs),
        );
        let when_busy = schedule.as_ref().map_or(WhenBusy::Wait, |s| s.when_busy);
        let when_asleep = schedule
            .as_ref()
            .map_or(WhenAsleep::Skip, |s| s.when_asleep);
        let mut turn = None;
        if job.heavy() {
            tokio::select! {
                guard = self.heavy.lock() => turn = Some(guard),
                _ = cancelled(&mut cancel) => {
                    self.finish(id, Outcome::new(JobStatus::Cancelled, "cancelled while queued", Value::Null), None);
                    return;
                }
            }
        }
        let started = std::time::Instant::now();
        self.update_run(id, |run| {
            run.status = JobStatus::Running;
            run.started_at = Some(unix_now());
            run.message = "running".into();
        });
        let mut waited = Duration::ZERO;
        loop {
            let why = self.unfavourable();
            match plan::gate(&job, when_busy, why, waited) {
                Gate::Go => break,
                Gate::Skip(why) => {
                    self.finish(id, Outcome::skipped(why), Some(started));
                    return;
                }
                Gate::Wait(why) => {
                    self.update_run(id, |run| run.message = format!("waiting: {why}"));
                    tokio::select! {
                        _ = tokio::time::sleep(RECHECK) => waited += RECHECK,
                        _ = cancelled(&mut cancel) => {
                            self.finish(id, Outcome::new(JobStatus::Cancelled, "cancelled while waiting", Value::Null), Some(started));
                            return;
                        }
                    }
                }
            }
        }
        let cleanup: Arc<Mutex<Option<Cleanup>>> = Arc::default();
        let outcome = tokio::select! {
            outcome = self.run_job(id, &job, when_asleep, &mut turn, &cleanup) => outcome,
            _ = tokio::time::sleep(timeout) => {
                self.stop(&cleanup).await;
                Outcome::new(JobStatus::Timeout, format!("did not finish within {} s; stopped", timeout.as_secs()), Value::Null)
            }
            _ = cancelled(&mut cancel) => {
                self.stop(&cleanup).await;
                Outcome::new(JobStatus::Cancelled, "cancelled", Value::Null)
            }
        };
        drop(turn);
        self.finish(id, outcome, Some(started));
    }

    /// Stops what a dropped job left running: a disk benchmark's threads,
    /// a drive's self-test.
    async fn stop(&self, cleanup: &Mutex<Option<Cleanup>>) {
        let what = locked(cleanup).take();
        match what {
            Some(Cleanup::DiskRun(run)) => {
                let _ = self.deps.disk_bench.cancel(run);
                // The run removes its files as it stops.
                for _ in 0..300 {
                    match self.deps.disk_bench.get(run) {
                        Ok(r) if r.status == disk::Status::Running => {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        _ => break,
                    }
                }
            }
            Some(Cleanup::SelfTest(name)) => {
                if let Err(err) = self.deps.disks.abort_self_test(&name).await {
                    tracing::warn!("self-test on {name} not aborted: {err}");
                }
            }
            None => {}
        }
    }

    fn unfavourable(&self) -> Option<String> {
        let host = &self.deps.host;
        let zones = inventory::thermal_zones(host).unwrap_or_default();
        let load = host
            .proc_loadavg()
            .ok()
            .flatten()
            .and_then(|t| inventory::parse::loadavg(&t))
            .map(|l| l.one);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        plan::unfavourable(&zones, load, cpus)
    }

    async fn run_job(
        &self,
        id: i64,
        job: &Job,
        when_asleep: WhenAsleep,
        turn: &mut Option<tokio::sync::MutexGuard<'_, ()>>,
        cleanup: &Mutex<Option<Cleanup>>,
    ) -> Outcome {
        match job {
            Job::DiskBenchmark { disk, preset } => {
                self.disk_benchmark(disk, preset, when_asleep, cleanup)
                    .await
            }
            Job::NetBenchmark { .. } => self.net_benchmark(id, job).await,
            Job::SmartTest { disk, test } => {
                self.smart_test(disk, *test, when_asleep, turn, cleanup)
                    .await
            }
            Job::HealthCheck => self.health_check(id).await,
            Job::Maintenance => self.maintenance().await,
        }
    }

    /// The disk, or why the job cannot run on it now.
    async fn ready_disk(&self, name: &str, when_asleep: WhenAsleep) -> Result<Disk, Outcome> {
        let list = self.deps.disks.list().await.map_err(|e| {
            Outcome::new(
                JobStatus::Failed,
                format!("cannot list disks: {e}"),
                Value::Null,
            )
        })?;
        let disk = find_disk(&list.disks, name)
            .cloned()
            .ok_or_else(|| Outcome::skipped(format!("disk {name} is not present")))?;
        if when_asleep == WhenAsleep::Skip
            && let Ok(report) = self.deps.disks.smart(&disk.volume.name).await
            && report.state == SmartState::Standby
        {
            return Err(Outcome::skipped(format!(
                "disk {name} is spun down; this schedule does not wake it"
            )));
        }
        Ok(disk)
    }

    async fn disk_benchmark(
        &self,
        name: &str,
        preset: &str,
        when_asleep: WhenAsleep,
        cleanup: &Mutex<Option<Cleanup>>,
    ) -> Outcome {
        let disk = match self.ready_disk(name, when_asleep).await {
            Ok(d) => d,
            Err(outcome) => return outcome,
        };
        let Some(target) = data_mountpoint(&disk) else {
            return Outcome::skipped(format!(
                "disk {name} is not mounted: there is nowhere to benchmark"
            ));
        };
        let request = DiskRequest {
            preset: Some(preset.to_owned()),
            jobfile: None,
            target,
            confirm_device: None,
        };
        let started = match self.deps.disk_bench.start(&request).await {
            Ok(s) => s,
            Err(err) => return Outcome::new(JobStatus::Failed, err.to_string(), Value::Null),
        };
        *locked(cleanup) = Some(Cleanup::DiskRun(started.id));
        let Ok(run) = started.done.await else {
            return Outcome::new(
                JobStatus::Failed,
                "the benchmark ended without a result",
                Value::Null,
            );
        };
        locked(cleanup).take();
        let regression = run.baseline.as_ref().is_some_and(|b| b.regression);
        let output = json!({
            "disk_run": run.id,
            "summary": run.summary,
            "regression": regression,
        });
        match run.status {
            disk::Status::Done if regression => Outcome::new(
                JobStatus::Warning,
                // The benchmark raised the regression event itself.
                disk::history::regression_message(&run)
                    .unwrap_or_else(|| "slower than its baseline".into()),
                output,
            ),
            disk::Status::Done => Outcome::new(
                JobStatus::Ok,
                format!("disk benchmark #{} done", run.id),
                output,
            ),
            disk::Status::Aborted => {
                Outcome::new(JobStatus::Skipped, run.error.unwrap_or_default(), output)
            }
            status => Outcome::new(
                JobStatus::Failed,
                format!(
                    "disk benchmark #{} {}: {}",
                    run.id,
                    status.as_str(),
                    run.error.unwrap_or_default()
                ),
                output,
            ),
        }
    }

    async fn net_benchmark(&self, id: i64, job: &Job) -> Outcome {
        let Some(options) = job.net_options() else {
            return Outcome::new(JobStatus::Failed, "not a network job", Value::Null);
        };
        let run = match self.deps.net.run_client(&options).await {
            Ok(run) => run,
            Err(err) => return Outcome::new(JobStatus::Failed, err.to_string(), Value::Null),
        };
        let flow = if options.reverse {
            run.server_to_client.as_ref()
        } else {
            run.client_to_server.as_ref()
        };
        let bps = flow.map_or(0.0, |f| f.bits_per_second);
        let previous: Vec<f64> = self
            .deps
            .store
            .finished_job_runs(job.kind(), &job.target(), id, BASELINE_RUNS)
            .unwrap_or_default()
            .iter()
            .filter_map(|doc| serde_json::from_str::<JobRun>(doc).ok())
            .filter_map(|r| r.output["bits_per_second"].as_f64())
            .collect();
        let runs = previous.len();
        let baseline = median(previous);
        let mut output = json!({
            "net_run": run.id,
            "bits_per_second": bps,
            "baseline_bits_per_second": baseline,
        });
        let text = format!("{:.1} Mbit/s to {}", bps / 1e6, options.peer);
        if let Some(base) = baseline.filter(|b| *b > 0.0) {
            let ratio = bps / base;
            output["ratio"] = json!(ratio);
            if ratio < 1.0 - f64::from(self.regression_percent) / 100.0 {
                let message = format!(
                    "network benchmark #{id} ({}): {text} is {:.0} % below the median {:.1} Mbit/s of the last {runs} runs",
                    job.target(),
                    (1.0 - ratio) * 100.0,
                    base / 1e6
                );
                self.event(Severity::Warning, &message);
                return Outcome::new(JobStatus::Warning, message, output);
            }
        }
        Outcome::new(JobStatus::Ok, text, output)
    }

    async fn smart_test(
        &self,
        name: &str,
        test: SmartTest,
        when_asleep: WhenAsleep,
        turn: &mut Option<tokio::sync::MutexGuard<'_, ()>>,
        cleanup: &Mutex<Option<Cleanup>>,
    ) -> Outcome {
        let disk = match self.ready_disk(name, when_asleep).await {
            Ok(d) => d,
            Err(outcome) => return outcome,
        };
        if device_type(disk.transport).is_none() {
            return Outcome::skipped(format!("disk {name} has no SMART"));
        }
        let kernel_name = disk.volume.name.clone();
        if let Err(err) = self
            .deps
            .disks
            .start_self_test(&kernel_name, test == SmartTest::Long)
            .await
        {
            return Outcome::new(JobStatus::Failed, err.to_string(), Value::Null);
        }
        *locked(cleanup) = Some(Cleanup::SelfTest(kernel_name.clone()));
        // The drive tests itself from here: other heavy jobs may go.
        turn.take();
        loop {
            tokio::time::sleep(SMART_POLL).await;
            let report = match self.deps.disks.smart(&kernel_name).await {
                Ok(r) => r,
                Err(err) => return Outcome::new(JobStatus::Failed, err.to_string(), Value::Null),
            };
            if report.self_test_remaining_percent.is_some() {
                continue;
            }
            locked(cleanup).take();
            let output = json!({
                "result": report.last_self_test,
                "passed": report.last_self_test_passed,
            });
            let result = report
                .last_self_test
                .unwrap_or_else(|| "no result in the log".into());
            return if report.last_self_test_passed == Some(false) {
                let message = format!(
                    "SMART {} self-test of {name} failed: {result}",
                    test.as_str()
                );
                self.event(Severity::Critical, &message);
                Outcome::new(JobStatus::Warning, message, output)
            } else {
                Outcome::new(
                    JobStatus::Ok,
                    format!("SMART {} self-test of {name}: {result}", test.as_str()),
                    output,
                )
            };
        }
    }

    async fn health_check(&self, id: i64) -> Outcome {
        let deps = &self.deps;
        let list = match deps.disks.list().await {
            Ok(list) => list,
            Err(err) => {
                return Outcome::new(
                    JobStatus::Failed,
                    format!("cannot list disks: {err}"),
                    Value::Null,
                );
            }
        };
        let previous: Option<JobRun> = deps
            .store
            .finished_job_runs("health_check", "system", id, 1)
            .unwrap_or_default()
            .first()
            .and_then(|doc| serde_json::from_str(doc).ok());
        let counters_before = previous
            .as_ref()
            .and_then(|r| serde_json::from_value(r.output["counters"].clone()).ok())
            .unwrap_or_default();
        let seen_before: Vec<String> = previous
            .as_ref()
            .and_then(|r| {
                serde_json::from_value::<Vec<health::Finding>>(r.output["findings"].clone()).ok()
            })
            .unwrap_or_default()
            .into_iter()
            .map(|f| f.key)
            .collect();
        let mut facts = health::Facts {
            zones: inventory::thermal_zones(&deps.host).unwrap_or_default(),
            counters_before,
            ..health::Facts::default()
        };
        for disk in &list.disks {
            for volume in
                std::iter::once(&disk.volume).chain(disk.partitions.iter().map(|p| &p.volume))
            {
                if let (Some(mountpoint), Some(usage)) = (&volume.mountpoint, &volume.usage) {
                    facts.filesystems.push(health::Filesystem {
                        mountpoint: mountpoint.clone(),
                        used_bytes: usage.used_bytes,
                        total_bytes: usage.total_bytes,
                    });
                }
            }
            let smart = if device_type(disk.transport).is_some() {
                deps.disks.smart(&disk.volume.name).await.ok()
            } else {
                None
            };
            facts.disks.push(health::DiskHealth {
                name: disk.volume.name.clone(),
                key: disk
                    .serial
                    .clone()
                    .unwrap_or_else(|| disk.volume.name.clone()),
                smart,
                usb_degraded: disk.usb_degraded,
                usb_speed_mbps: disk.usb_speed_mbps,
            });
        }
        facts.mounts_missing = list
            .missing_mounts
            .iter()
            .map(|m| m.mountpoint.clone())
            .collect();
        if let Ok(stored) = deps.store.mounts() {
            for m in stored {
                let present_unmounted = list.disks.iter().any(|d| {
                    std::iter::once(&d.volume)
                        .chain(d.partitions.iter().map(|p| &p.volume))
                        .any(|v| {
                            v.fs.as_ref().and_then(|f| f.uuid.as_deref()) == Some(m.uuid.as_str())
                                && v.mountpoint.is_none()
                        })
                });
                if present_unmounted {
                    facts.mounts_missing.push(m.mountpoint.clone());
                }
            }
        }
        match deps.tuner.enforce().await {
            Ok(changes) => {
                facts.tuning_drift = changes
                    .iter()
                    .map(|c| {
                        format!(
                            "{}: {} -> {}",
                            c.knob,
                            c.from.as_deref().unwrap_or("?"),
                            c.to
                        )
                    })
                    .collect();
            }
            Err(err) => tracing::debug!("health check: tuning not compared: {err}"),
        }
        let findings = health::findings(&facts);
        for finding in findings.iter().filter(|f| !seen_before.contains(&f.key)) {
            self.event(
                finding.severity,
                &format!("health check: {}", finding.message),
            );
        }
        let output = json!({
            "findings": findings,
            "counters": health::counters(&facts),
        });
        if findings.is_empty() {
            Outcome::new(JobStatus::Ok, "all well", output)
        } else {
            let summary: Vec<&str> = findings.iter().map(|f| f.message.as_str()).collect();
            Outcome::new(JobStatus::Warning, summary.join("; "), output)
        }
    }

    async fn maintenance(&self) -> Outcome {
        let store = self.deps.store.clone();
        let done = tokio::task::spawn_blocking(move || -> Result<Value, StoreError> {
            store.expire_samples(unix_now())?;
            let (free, size) = store.free_pages_bytes()?;
            let worthwhile =
                free >= VACUUM_MIN_BYTES && free as f64 >= size as f64 * VACUUM_FREE_SHARE;
            if worthwhile {
                store.vacuum()?;
            }
            let (_, after) = store.free_pages_bytes()?;
            Ok(json!({
                "size_before_bytes": size,
                "size_after_bytes": after,
                "free_bytes": free,
                "vacuumed": worthwhile,
            }))
        })
        .await;
        match done {
            Ok(Ok(output)) => {
                let message = if output["vacuumed"] == true {
                    format!(
                        "expired old samples; VACUUM shrank the database from {} to {} bytes",
                        output["size_before_bytes"], output["size_after_bytes"]
                    )
                } else {
                    "expired old samples; VACUUM not worthwhile".to_owned()
                };
                Outcome::new(JobStatus::Ok, message, output)
            }
            Ok(Err(err)) => Outcome::new(JobStatus::Failed, err.to_string(), Value::Null),
            Err(err) => Outcome::new(JobStatus::Failed, err.to_string(), Value::Null),
        }
    }

    pub fn jobs(&self, limit: u32) -> Result<Vec<JobRun>, ScheduleError> {
        Ok(self
            .deps
            .store
            .job_runs(limit)?
            .iter()
            .filter_map(|doc| match serde_json::from_str(doc) {
                Ok(run) => Some(run),
                Err(err) => {
                    tracing::warn!("skipping an unreadable job record: {err}");
                    None
                }
            })
            .collect())
    }

    pub fn job(&self, id: i64) -> Result<JobRun, ScheduleError> {
        let doc = self
            .deps
            .store
            .job_run(id)?
            .ok_or(ScheduleError::JobNotFound(id))?;
        serde_json::from_str(&doc).map_err(|e| ScheduleError::Corrupt {
            what: "job run",
            id,
            message: e.to_string(),
        })
    }

    /// Cancels a queued or running job: its programs are killed, a disk
    /// benchmark stops and removes its files, a drive's self-test is
    /// aborted.
    pub fn cancel(&self, id: i64) -> Result<(), ScheduleError> {
        let switch = locked(&self.running).get(&id).cloned();
        match switch {
            Some(switch) => {
                let _ = switch.send(true);
                Ok(())
            }
            None => {
                self.job(id)?;
                Err(ScheduleError::NotRunning(id))
            }
        }
    }
}

/// Resolves when the job's cancel switch is on (or its sender is gone).
async fn cancelled(switch: &mut watch::Receiver<bool>) {
    // The guard wait_for returns is dropped here, before any other await.
    let _ = switch.wait_for(|on| *on).await.map(|_| ());
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Schedules and runs hold only strings, numbers, lists and JSON values.
    serde_json::to_string(value).unwrap_or_default()
}
