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
use model::{Job, JobRun, JobStatus, Schedule, ScheduleRequest, SmartTest, WhenAsleep};
use plan::{Gate, Timetable};

/// A heavy job that must wait re-checks the board this often.
const RECHECK: Duration = Duration::from_secs(60);
/// A running SMART self-test is polled this often (after the drive's own
/// estimate of its duration has passed).
const SMART_POLL: Duration = Duration::from_secs(60);
/// Polls in a row without a readable report before a self-test is given up.
const SMART_UNREADABLE_POLLS: u32 = 30;
/// A busy iperf3 peer is asked again this many times, this far apart.
const PEER_BUSY_TRIES: u32 = 20;
const PEER_BUSY_WAIT: Duration = Duration::from_secs(3);
/// Runs of the same job a result is compared with (their median).
const BASELINE_RUNS: u32 = 5;
/// VACUUM when at least this share of the database file is free pages.
const VACUUM_FREE_SHARE: f64 = 0.25;
const VACUUM_MIN_BYTES: u64 = 4 << 20;
/// The loop wakes at least this often: to see schedules the command line
/// changed in the store, and to notice a clock that was set.
const TICK: Duration = Duration::from_secs(60);
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
    #[error("job run #{0} is not queued or running in this process")]
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

    fn failed(message: impl Into<String>) -> Self {
        Outcome::new(JobStatus::Failed, message, Value::Null)
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

/// The thresholds the configuration sets.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub regression_percent: u8,
    pub busy_load_per_cpu: f64,
}

/// A queued or running job's cancel switch, and its schedule.
struct Running {
    schedule_id: i64,
    switch: watch::Sender<bool>,
}

pub struct Scheduler {
    deps: Deps,
    zone: TimeZone,
    zone_name: String,
    limits: Limits,
    /// Heavy jobs run one at a time, in the order they were queued.
    heavy: tokio::sync::Mutex<()>,
    running: Mutex<HashMap<i64, Running>>,
    table: Mutex<Timetable>,
    /// The stored documents the timetable was built from, by id: a change
    /// made from the command line shows up as a difference.
    known: Mutex<HashMap<i64, String>>,
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

/// What tells one self-test log entry from the next: how many entries the
/// log has, and the newest one's power-on hour and text.
fn self_test_mark(
    report: &crate::disks::smart::SmartReport,
) -> (Option<u64>, Option<u64>, Option<String>) {
    (
        report.self_test_log_entries,
        report.last_self_test_hours,
        report.last_self_test.clone(),
    )
}

impl Scheduler {
    /// Schedules run in the system's time zone (jiff reads TZ, then
    /// /etc/localtime).
    pub fn new(deps: Deps, limits: Limits) -> Self {
        let zone = TimeZone::system();
        let zone_name = match zone.iana_name() {
            Some(name) => name.to_owned(),
            None => {
                tracing::warn!(
                    "the local time zone has no IANA name (is /etc/localtime a copy rather than a link?); schedules run in UTC"
                );
                "UTC".to_owned()
            }
        };
        Scheduler {
            deps,
            zone,
            zone_name,
            limits,
            heavy: tokio::sync::Mutex::new(()),
            running: Mutex::default(),
            table: Mutex::default(),
            known: Mutex::default(),
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

    fn parse_schedule(id: i64, doc: &str) -> Result<Schedule, ScheduleError> {
        let mut schedule: Schedule =
            serde_json::from_str(doc).map_err(|e| ScheduleError::Corrupt {
                what: "schedule",
                id,
                message: e.to_string(),
            })?;
        // The row's id is the schedule's, whatever the document says.
        schedule.id = id;
        Ok(schedule)
    }

    /// Every readable schedule with its document and last run; one that
    /// cannot be read is skipped (and logged), not the end of scheduling.
    fn stored(&self) -> Result<Vec<(Schedule, String, Option<i64>)>, ScheduleError> {
        Ok(self
            .deps
            .store
            .schedules()?
            .into_iter()
            .filter_map(|(id, doc, last)| match Self::parse_schedule(id, &doc) {
                Ok(schedule) => Some((schedule, doc, last)),
                Err(err) => {
                    tracing::warn!("{err}");
                    None
                }
            })
            .collect())
    }

    pub fn list(&self) -> Result<Vec<ScheduleView>, ScheduleError> {
        Ok(self
            .stored()?
            .into_iter()
            .map(|(s, _, last)| self.view(s, last))
            .collect())
    }

    pub fn get(&self, id: i64) -> Result<ScheduleView, ScheduleError> {
        let (doc, last) = self
            .deps
            .store
            .schedule(id)?
            .ok_or(ScheduleError::NotFound(id))?;
        Ok(self.view(Self::parse_schedule(id, &doc)?, last))
    }

    pub fn add(&self, request: ScheduleRequest) -> Result<ScheduleView, ScheduleError> {
        let now = unix_now();
        self.cron(&request.cron)?;
        let mut schedule = request.into_schedule(0, now, now)?;
        schedule.id = self.deps.store.add_schedule(&to_json(&schedule))?;
        self.changed.notify_one();
        Ok(self.view(schedule, None))
    }

    pub fn update(&self, id: i64, request: ScheduleRequest) -> Result<ScheduleView, ScheduleError> {
        let current = self.get(id)?;
        self.cron(&request.cron)?;
        let schedule = request.into_schedule(id, current.schedule.created_at, unix_now())?;
        if !self.deps.store.put_schedule(id, &to_json(&schedule))? {
            return Err(ScheduleError::NotFound(id));
        }
        self.changed.notify_one();
        self.get(id)
    }

    pub fn remove(&self, id: i64) -> Result<(), ScheduleError> {
        if !self.deps.store.remove_schedule(id)? {
            return Err(ScheduleError::NotFound(id));
        }
        self.changed.notify_one();
        Ok(())
    }

    /// A fresh install's schedules, once: a weekly SMART short test and a
    /// monthly long one of every disk, a nightly health check, a weekly
    /// quick benchmark of every data disk, weekly store upkeep. The short
    /// test's Sunday and the benchmark's Saturday may meet the long test
    /// of the 1st: those jobs skip a disk whose self-test is running.
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

    /// Before the API serves: marks what a stop interrupted and builds the
    /// timetable. Returns the missed runs to catch up.
    pub fn start(&self) -> Vec<plan::CatchUp> {
        if let Err(err) = self.mark_interrupted() {
            tracing::error!("job history: {err}");
        }
        self.rebuild(Timestamp::now())
    }

    /// The timetable from the stored schedules, as at start.
    fn rebuild(&self, now: Timestamp) -> Vec<plan::CatchUp> {
        let schedules = match self.stored() {
            Ok(s) => s,
            Err(err) => {
                tracing::error!("schedules not loaded: {err}");
                return Vec::new();
            }
        };
        let mut known = HashMap::new();
        let mut with_cron = Vec::new();
        for (schedule, doc, last) in schedules {
            known.insert(schedule.id, doc);
            match self.cron(&schedule.cron) {
                Ok(cron) => with_cron.push((schedule, cron, last)),
                Err(err) => tracing::warn!("schedule #{}: {err}", schedule.id),
            }
        }
        let (table, catch_up) = Timetable::at_start(&with_cron, now);
        *locked(&self.table) = table;
        *locked(&self.known) = known;
        catch_up
    }

    /// Brings the timetable in line with the store: schedules added,
    /// edited or removed by the API or the command line.
    fn refresh(&self, now: Timestamp) {
        let Ok(schedules) = self.stored() else { return };
        let mut known = locked(&self.known);
        let mut table = locked(&self.table);
        let ids: Vec<i64> = schedules.iter().map(|(s, _, _)| s.id).collect();
        for (schedule, doc, _) in schedules {
            if known.get(&schedule.id) == Some(&doc) {
                continue;
            }
            match self.cron(&schedule.cron) {
                Ok(cron) => table.set(&schedule, cron, now),
                Err(_) => table.remove(schedule.id),
            }
            known.insert(schedule.id, doc);
        }
        known.retain(|id, _| {
            let keep = ids.contains(id);
            if !keep {
                table.remove(*id);
            }
            keep
        });
    }

    /// Fires each schedule at its time until the process ends. A clock
    /// that was set is handled as a start: catch-up where asked, no burst.
    pub async fn run(self: Arc<Self>, catch_up: Vec<plan::CatchUp>) {
        let catch_up_now = |missed: Vec<plan::CatchUp>| {
            for m in missed {
                tracing::info!(
                    "schedule #{} missed its run at {}; running it once now",
                    m.schedule_id,
                    m.missed_at
                );
                if let Err(err) = self.fire(m.schedule_id) {
                    tracing::error!("schedule #{}: {err}", m.schedule_id);
                }
            }
        };
        catch_up_now(catch_up);
        let mut last = (std::time::Instant::now(), Timestamp::now());
        loop {
            let now = Timestamp::now();
            let slept = last.0.elapsed();
            if plan::clock_stepped(slept, now.duration_since(last.1)) {
                tracing::warn!(
                    "the clock was set ({} -> {now}); schedules start over",
                    last.1
                );
                catch_up_now(self.rebuild(now));
            } else {
                self.refresh(now);
            }
            last = (std::time::Instant::now(), now);
            let due = locked(&self.table).due(now);
            for id in due {
                if let Err(err) = self.fire(id) {
                    tracing::error!("schedule #{id}: {err}");
                }
            }
            let wait = locked(&self.table)
                .next_due()
                .map(|next| next.duration_since(Timestamp::now()))
                .and_then(|span| Duration::try_from(span).ok())
                .unwrap_or(TICK)
                .min(TICK);
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

    /// Queues the run of a schedule and starts it (for `all`, one run that
    /// runs one per disk); the handles end when the runs do. A schedule
    /// whose previous run is still queued or running records a skip.
    pub fn fire(
        self: &Arc<Self>,
        id: i64,
    ) -> Result<Vec<(i64, tokio::task::JoinHandle<()>)>, ScheduleError> {
        let schedule = self.get(id)?.schedule;
        self.deps.store.set_schedule_ran(id, unix_now())?;
        let busy = locked(&self.running)
            .iter()
            .find(|(_, r)| r.schedule_id == id)
            .map(|(job, _)| *job);
        if let Some(previous) = busy {
            let run = self.record_new(&schedule, &schedule.job)?;
            self.finish(
                run,
                Outcome::skipped(format!("its previous run #{previous} is still going")),
                None,
            );
            return Ok(Vec::new());
        }
        let all = schedule.job.disk() == Some("all");
        let (run_id, mut cancel) = self.enqueue(&schedule, &schedule.job)?;
        let me = self.clone();
        let handle = tokio::spawn(async move {
            if all {
                me.expand_all(run_id, schedule, cancel).await;
            } else {
                let job = schedule.job.clone();
                me.execute(run_id, schedule, job, &mut cancel).await;
            }
        });
        Ok(vec![(run_id, handle)])
    }

    /// Records a queued run and arms its cancel switch.
    fn enqueue(
        &self,
        schedule: &Schedule,
        job: &Job,
    ) -> Result<(i64, watch::Receiver<bool>), ScheduleError> {
        let run_id = self.record_new(schedule, job)?;
        let (switch, cancel) = watch::channel(false);
        locked(&self.running).insert(
            run_id,
            Running {
                schedule_id: schedule.id,
                switch,
            },
        );
        Ok((run_id, cancel))
    }

    /// `all`: one run per disk that can take the job, one after another
    /// (heavy jobs queue anyway). This run stays running until they end,
    /// cancelling it cancels them, and it records how they went.
    async fn expand_all(
        self: Arc<Self>,
        run_id: i64,
        schedule: Schedule,
        cancel: watch::Receiver<bool>,
    ) {
        let started = std::time::Instant::now();
        self.update_run(run_id, |run| {
            run.status = JobStatus::Running;
            run.started_at = Some(unix_now());
        });
        let list = match self.deps.disks.list().await {
            Ok(list) => list,
            Err(err) => {
                self.finish(
                    run_id,
                    Outcome::failed(format!("cannot list disks: {err}")),
                    Some(started),
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
            self.finish(run_id, Outcome::skipped(why), Some(started));
            return;
        }
        let mut children = Vec::new();
        let mut cancelled_all = false;
        for name in &names {
            if *cancel.borrow() {
                cancelled_all = true;
                break;
            }
            let job = schedule.job.for_disk(name);
            let record = self.record_new(&schedule, &job);
            let Ok(child) = record else { continue };
            children.push(child);
            self.update_run(run_id, |run| {
                run.message = format!("running one job per disk: {}", names.join(", "));
                run.output = json!({ "runs": children });
            });
            // The child shares this run's cancel switch.
            let mut child_cancel = cancel.clone();
            self.clone()
                .execute(child, schedule.clone(), job, &mut child_cancel)
                .await;
        }
        let statuses: Vec<String> = children
            .iter()
            .filter_map(|id| self.job(*id).ok())
            .map(|r| format!("{} {}", r.job.disk().unwrap_or("?"), r.status.as_str()))
            .collect();
        let status = if cancelled_all || *cancel.borrow() {
            JobStatus::Cancelled
        } else {
            JobStatus::Ok
        };
        self.finish(
            run_id,
            Outcome::new(status, statuses.join(", "), json!({ "runs": children })),
            Some(started),
        );
    }

    fn record_new(&self, schedule: &Schedule, job: &Job) -> Result<i64, ScheduleError> {
        let run = JobRun {
            id: 0,
            schedule_id: Some(schedule.id),
            schedule_name: Some(schedule.name.clone()),
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
            if !outcome.output.is_null() || run.output.is_null() {
                run.output = outcome.output.clone();
            }
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
        schedule: Schedule,
        job: Job,
        cancel: &mut watch::Receiver<bool>,
    ) {
        let timeout = Duration::from_secs(schedule.timeout_secs);
        let mut turn = None;
        if job.heavy() {
            tokio::select! {
                guard = self.heavy.lock() => turn = Some(guard),
                _ = cancelled(cancel) => {
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
            match plan::gate(&job, schedule.when_busy, self.unfavourable(), waited) {
                Gate::Go => break,
                Gate::Skip(why) => {
                    self.finish(id, Outcome::skipped(why), Some(started));
                    return;
                }
                Gate::Wait(why) => {
                    self.update_run(id, |run| run.message = format!("waiting: {why}"));
                    tokio::select! {
                        _ = tokio::time::sleep(RECHECK) => waited += RECHECK,
                        _ = cancelled(cancel) => {
                            self.finish(id, Outcome::new(JobStatus::Cancelled, "cancelled while waiting", Value::Null), Some(started));
                            return;
                        }
                    }
                }
            }
        }
        let cleanup: Mutex<Option<Cleanup>> = Mutex::new(None);
        let outcome = tokio::select! {
            outcome = self.run_job(id, &job, schedule.when_asleep, &mut turn, &cleanup) => outcome,
            _ = tokio::time::sleep(timeout) => {
                self.stop(&cleanup).await;
                Outcome::new(JobStatus::Timeout, format!("did not finish within {} s; stopped", timeout.as_secs()), Value::Null)
            }
            _ = cancelled(cancel) => {
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
        // The board's CPUs (as its cpufreq policies list them).
        let cpus = inventory::clusters(host)
            .map(|c| c.iter().map(|c| c.cpus.len()).sum::<usize>())
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        plan::unfavourable(&zones, load, cpus, self.limits.busy_load_per_cpu)
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

    /// The disk, or why the job cannot run on it now: absent, spun down
    /// (unless the schedule wakes it), or busy with its own self-test.
    async fn ready_disk(&self, name: &str, when_asleep: WhenAsleep) -> Result<Disk, Outcome> {
        let list = self
            .deps
            .disks
            .list()
            .await
            .map_err(|e| Outcome::failed(format!("cannot list disks: {e}")))?;
        let disk = find_disk(&list.disks, name)
            .cloned()
            .ok_or_else(|| Outcome::skipped(format!("disk {name} is not present")))?;
        if device_type(disk.transport).is_some()
            && let Ok(report) = self.deps.disks.smart(&disk.volume.name).await
        {
            if report.state == SmartState::Standby && when_asleep == WhenAsleep::Skip {
                return Err(Outcome::skipped(format!(
                    "disk {name} is spun down; this schedule does not wake it"
                )));
            }
            if let Some(left) = report.self_test_remaining_percent {
                return Err(Outcome::skipped(format!(
                    "disk {name} is running its own self-test ({left} % left)"
                )));
            }
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
        if disk.system {
            return Outcome::skipped(format!(
                "disk {name} holds the running system; benchmarks run on data disks"
            ));
        }
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
            Err(err) => return Outcome::failed(err.to_string()),
        };
        *locked(cleanup) = Some(Cleanup::DiskRun(started.id));
        let Ok(run) = started.done.await else {
            return Outcome::failed("the benchmark ended without a result");
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
            return Outcome::failed("not a network job");
        };
        // A server busy with another test (or still closing the last one)
        // is asked again for a while before the job fails.
        let mut tries = 0;
        let run = loop {
            match self.deps.net.run_client(&options).await {
                Ok(run) => break run,
                Err(crate::bench::net::NetError::Busy) if tries < PEER_BUSY_TRIES => {
                    tries += 1;
                    tokio::time::sleep(PEER_BUSY_WAIT).await;
                }
                Err(err) => return Outcome::failed(err.to_string()),
            }
        };
        let flow = if options.reverse {
            run.server_to_client.as_ref()
        } else {
            run.client_to_server.as_ref()
        };
        let Some(bps) = flow.map(|f| f.bits_per_second).filter(|b| *b > 0.0) else {
            return Outcome::failed(format!("no data flowed in network test #{}", run.id));
        };
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
        let baseline = disk::history::median(previous);
        let mut output = json!({
            "net_run": run.id,
            "bits_per_second": bps,
            "baseline_bits_per_second": baseline,
        });
        let text = format!("{:.1} Mbit/s to {}", bps / 1e6, options.peer);
        if let Some(base) = baseline.filter(|b| *b > 0.0) {
            let ratio = bps / base;
            output["ratio"] = json!(ratio);
            if ratio < 1.0 - f64::from(self.limits.regression_percent) / 100.0 {
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

    /// Starts the drive's self-test and waits for its entry in the log: the
    /// drive's own estimate first, then a poll a minute. A report that
    /// cannot be read (asleep, a bridge hiccup) is polled again, up to a
    /// limit; an old entry is never taken for this test's result.
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
        let before = match self.deps.disks.smart(&kernel_name).await {
            Ok(report) => report,
            Err(err) => return Outcome::failed(err.to_string()),
        };
        if let Err(err) = self
            .deps
            .disks
            .start_self_test(&kernel_name, test == SmartTest::Long)
            .await
        {
            return Outcome::failed(err.to_string());
        }
        *locked(cleanup) = Some(Cleanup::SelfTest(kernel_name.clone()));
        // The drive tests itself from here: other heavy jobs may go (those
        // on this disk skip it while its test runs).
        turn.take();
        let estimate = match test {
            SmartTest::Short => before.short_test_minutes,
            SmartTest::Long => before.long_test_minutes,
        };
        let mut wait = estimate.map_or(SMART_POLL, |m| Duration::from_secs(m * 60));
        let mut unreadable = 0;
        loop {
            tokio::time::sleep(wait).await;
            wait = SMART_POLL;
            let report = match self.deps.disks.smart(&kernel_name).await {
                Ok(r) if r.state == SmartState::Read => r,
                _ => {
                    unreadable += 1;
                    if unreadable >= SMART_UNREADABLE_POLLS {
                        return Outcome::failed(format!(
                            "the SMART report of {name} could not be read {unreadable} times in a row"
                        ));
                    }
                    continue;
                }
            };
            unreadable = 0;
            if report.self_test_remaining_percent.is_some()
                || self_test_mark(&report) == self_test_mark(&before)
            {
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
            Err(err) => return Outcome::failed(format!("cannot list disks: {err}")),
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
        // Drift the tuning loop put back since the last check (it raised
        // its own events).
        let since = previous
            .as_ref()
            .and_then(|r| r.started_at)
            .unwrap_or(unix_now() - 86_400);
        if let Ok(events) = deps.tuner.events() {
            facts.tuning_drift = events
                .into_iter()
                .filter(|e| e.at >= since && e.message.starts_with("drift:"))
                .map(|e| e.message)
                .collect();
        }
        let findings = health::findings(&facts);
        let news = findings
            .iter()
            .filter(|f| !seen_before.contains(&f.key) && !f.key.starts_with("drift:"));
        for finding in news {
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
            Ok(Err(err)) => Outcome::failed(err.to_string()),
            Err(err) => Outcome::failed(err.to_string()),
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
    /// aborted; for `all`, every disk's run.
    pub fn cancel(&self, id: i64) -> Result<(), ScheduleError> {
        let sent = locked(&self.running)
            .get(&id)
            .map(|r| r.switch.send(true).is_ok());
        match sent {
            Some(_) => Ok(()),
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
