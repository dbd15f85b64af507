//! Schedules and jobs as they are stored and shown, and the rules their
//! input must meet (every value that reaches a job is whitelisted here).

use serde::{Deserialize, Serialize};

use crate::bench::disk::presets;
use crate::bench::net::ClientOptions;
use crate::validate::Invalid;

/// What a schedule runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Job {
    /// A disk benchmark preset in the mount point of a data disk nasd
    /// mounted (`disk`: its name, serial, or `all`).
    DiskBenchmark { disk: String, preset: String },
    /// A network test against an iperf3 server.
    NetBenchmark {
        peer: String,
        #[serde(default)]
        reverse: bool,
        #[serde(default = "one")]
        parallel: u32,
        #[serde(default = "ten")]
        time: u32,
    },
    /// `smartctl -t short|long`, with its result collected when the drive
    /// finishes.
    SmartTest { disk: String, test: SmartTest },
    /// Temperatures, filesystem fill, SMART counters that grew, USB links,
    /// tuning drift, managed mounts that are missing.
    HealthCheck,
    /// Store upkeep: retention and VACUUM when worthwhile.
    Maintenance,
}

fn one() -> u32 {
    1
}

fn ten() -> u32 {
    10
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmartTest {
    Short,
    Long,
}

impl SmartTest {
    pub fn as_str(self) -> &'static str {
        match self {
            SmartTest::Short => "short",
            SmartTest::Long => "long",
        }
    }
}

impl Job {
    pub fn kind(&self) -> &'static str {
        match self {
            Job::DiskBenchmark { .. } => "disk_benchmark",
            Job::NetBenchmark { .. } => "net_benchmark",
            Job::SmartTest { .. } => "smart_test",
            Job::HealthCheck => "health_check",
            Job::Maintenance => "maintenance",
        }
    }

    /// Heavy jobs load the disks, the network or the CPU: they run one at
    /// a time, and wait (or skip) while the board is hot or busy. Upkeep is
    /// one too: VACUUM rewrites the database file.
    pub fn heavy(&self) -> bool {
        !matches!(self, Job::HealthCheck)
    }

    /// The disk a job names, if any (`all` included).
    pub fn disk(&self) -> Option<&str> {
        match self {
            Job::DiskBenchmark { disk, .. } | Job::SmartTest { disk, .. } => Some(disk),
            _ => None,
        }
    }

    /// The job for one disk of an `all` job.
    pub fn for_disk(&self, name: &str) -> Job {
        match self {
            Job::DiskBenchmark { preset, .. } => Job::DiskBenchmark {
                disk: name.to_owned(),
                preset: preset.clone(),
            },
            Job::SmartTest { test, .. } => Job::SmartTest {
                disk: name.to_owned(),
                test: *test,
            },
            other => other.clone(),
        }
    }

    /// What the job works on, for its history and its comparisons.
    pub fn target(&self) -> String {
        match self {
            Job::DiskBenchmark { disk, preset } => format!("{disk}:{preset}"),
            Job::NetBenchmark {
                peer,
                reverse,
                parallel,
                time,
            } => format!(
                "{peer}:{}:{parallel}x{time}s",
                if *reverse { "reverse" } else { "forward" }
            ),
            Job::SmartTest { disk, test } => format!("{disk}:{}", test.as_str()),
            Job::HealthCheck | Job::Maintenance => "system".into(),
        }
    }

    /// How long the job may take unless the schedule says otherwise.
    pub fn default_timeout_secs(&self) -> u64 {
        match self {
            // kubestr runs about 8 min, dbench 3, quick 0.5.
            Job::DiskBenchmark { .. } => 30 * 60,
            Job::NetBenchmark { time, .. } => u64::from(*time) + 120,
            Job::SmartTest {
                test: SmartTest::Short,
                ..
            } => 30 * 60,
            // A long test of a large disk takes most of a day.
            Job::SmartTest {
                test: SmartTest::Long,
                ..
            } => 36 * 3600,
            Job::HealthCheck => 10 * 60,
            Job::Maintenance => 60 * 60,
        }
    }

    pub fn net_options(&self) -> Option<ClientOptions> {
        match self {
            Job::NetBenchmark {
                peer,
                reverse,
                parallel,
                time,
            } => Some(ClientOptions {
                peer: peer.clone(),
                reverse: *reverse,
                bidir: false,
                parallel: *parallel,
                time: *time,
            }),
            _ => None,
        }
    }

    pub fn check(&self) -> Result<(), Invalid> {
        if let Some(disk) = self.disk() {
            let ok = !disk.is_empty()
                && disk.len() <= 64
                && disk
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c));
            if !ok {
                return Err(Invalid::new(
                    "job.disk",
                    "must be `all`, a disk's name (sda) or its serial: letters, digits and . _ : -",
                ));
            }
        }
        match self {
            Job::DiskBenchmark { preset, .. } => {
                presets::jobfile(preset).map_err(|_| {
                    Invalid::new(
                        "job.preset",
                        format!("must be one of {}", presets::NAMES.join(", ")),
                    )
                })?;
            }
            Job::NetBenchmark { .. } => {
                if let Some(options) = self.net_options() {
                    options
                        .check(&Default::default())
                        .map_err(|e| Invalid::new(format!("job.{}", e.field), e.rule))?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// What to do when a job's disk is spun down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WhenAsleep {
    Skip,
    Wake,
}

/// What a heavy job does while the board is hot or busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WhenBusy {
    /// Re-check every minute for up to half an hour, then skip.
    Wait,
    Skip,
}

/// A schedule as the API takes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    pub name: String,
    pub cron: String,
    pub job: Job,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// After downtime, run once at start if a run was missed.
    #[serde(default)]
    pub catch_up: bool,
    /// Default: wake for SMART tests (they must run), skip otherwise.
    pub when_asleep: Option<WhenAsleep>,
    #[serde(default = "wait")]
    pub when_busy: WhenBusy,
    /// Default: the job kind's own.
    pub timeout_secs: Option<u64>,
}

fn yes() -> bool {
    true
}

fn wait() -> WhenBusy {
    WhenBusy::Wait
}

/// A stored schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub id: i64,
    pub name: String,
    pub cron: String,
    pub job: Job,
    pub enabled: bool,
    pub catch_up: bool,
    pub when_asleep: WhenAsleep,
    pub when_busy: WhenBusy,
    pub timeout_secs: u64,
    pub created_at: i64,
    /// When it was last added, edited or enabled: a run "missed" before
    /// then was not missed by downtime and is not caught up.
    pub changed_at: i64,
}

pub const TIMEOUT_RANGE_SECS: std::ops::RangeInclusive<u64> = 10..=7 * 86_400;

impl ScheduleRequest {
    /// The schedule this request makes (the cron is checked by the caller,
    /// which knows the time zone).
    pub fn into_schedule(self, id: i64, created_at: i64, now: i64) -> Result<Schedule, Invalid> {
        let name = self.name.trim();
        let name_ok =
            !name.is_empty() && name.chars().count() <= 80 && !name.chars().any(char::is_control);
        if !name_ok {
            return Err(Invalid::new(
                "name",
                "must be 1 to 80 characters without control characters",
            ));
        }
        self.job.check()?;
        let timeout_secs = self
            .timeout_secs
            .unwrap_or_else(|| self.job.default_timeout_secs());
        if !TIMEOUT_RANGE_SECS.contains(&timeout_secs) {
            return Err(Invalid::new(
                "timeout_secs",
                format!(
                    "must be {} to {} seconds",
                    TIMEOUT_RANGE_SECS.start(),
                    TIMEOUT_RANGE_SECS.end()
                ),
            ));
        }
        let when_asleep = self.when_asleep.unwrap_or(match self.job {
            Job::SmartTest { .. } => WhenAsleep::Wake,
            _ => WhenAsleep::Skip,
        });
        Ok(Schedule {
            id,
            name: name.to_owned(),
            cron: self.cron.trim().to_owned(),
            job: self.job,
            enabled: self.enabled,
            catch_up: self.catch_up,
            when_asleep,
            when_busy: self.when_busy,
            timeout_secs,
            created_at,
            changed_at: now,
        })
    }
}

/// How a job run ended (or that it has not yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    Queued,
    Running,
    Ok,
    /// Ran and found something wrong (a failed SMART test, a health
    /// finding, a regression).
    Warning,
    Failed,
    Skipped,
    Timeout,
    Cancelled,
    /// nasd stopped while it ran.
    Interrupted,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Ok => "ok",
            JobStatus::Warning => "warning",
            JobStatus::Failed => "failed",
            JobStatus::Skipped => "skipped",
            JobStatus::Timeout => "timeout",
            JobStatus::Cancelled => "cancelled",
            JobStatus::Interrupted => "interrupted",
        }
    }

    pub fn finished(self) -> bool {
        !matches!(self, JobStatus::Queued | JobStatus::Running)
    }
}

/// One run of a job, in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRun {
    pub id: i64,
    pub schedule_id: Option<i64>,
    pub schedule_name: Option<String>,
    pub job: Job,
    pub status: JobStatus,
    /// Unix seconds.
    pub queued_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub duration_secs: Option<f64>,
    /// One line: what happened, or why it was skipped.
    pub message: String,
    /// The job's own result (a disk run, a network run, findings...).
    pub output: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(job: serde_json::Value) -> Result<Schedule, Invalid> {
        let req: ScheduleRequest = serde_json::from_value(serde_json::json!({
            "name": "weekly", "cron": "@weekly", "job": job
        }))
        .map_err(|e| Invalid::new("json", e.to_string()))?;
        req.into_schedule(1, 0, 0)
    }

    #[test]
    fn jobs_are_whitelisted_and_get_their_defaults() {
        let s = request(serde_json::json!({"kind": "smart_test", "disk": "all", "test": "long"}))
            .unwrap();
        assert_eq!(s.when_asleep, WhenAsleep::Wake);
        assert_eq!(s.timeout_secs, 36 * 3600);
        let s = request(
            serde_json::json!({"kind": "disk_benchmark", "disk": "sdb", "preset": "quick"}),
        )
        .unwrap();
        assert_eq!(s.when_asleep, WhenAsleep::Skip);
        assert!(s.job.heavy());
        assert_eq!(s.job.target(), "sdb:quick");
        let err = request(
            serde_json::json!({"kind": "disk_benchmark", "disk": "sdb;rm", "preset": "quick"}),
        )
        .unwrap_err();
        assert_eq!(err.field, "job.disk");
        let err =
            request(serde_json::json!({"kind": "disk_benchmark", "disk": "sdb", "preset": "huge"}))
                .unwrap_err();
        assert_eq!(err.field, "job.preset");
        let err = request(serde_json::json!({"kind": "net_benchmark", "peer": "a b"})).unwrap_err();
        assert_eq!(err.field, "job.peer");
        let err = request(serde_json::json!({"kind": "net_benchmark", "peer": "nas", "time": 0}))
            .unwrap_err();
        assert_eq!(err.field, "job.time");
        let err = request(serde_json::json!({"kind": "reboot"})).unwrap_err();
        assert!(err.rule.contains("unknown variant"), "{err}");
        let s = request(serde_json::json!({"kind": "health_check"})).unwrap();
        assert!(!s.job.heavy());
    }
}
