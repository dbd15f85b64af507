//! Disk benchmarks that give figures people can put beside fio's: fio's
//! job files and the presets people run, a native engine (io_uring, Linux
//! AIO through raw syscalls, or one request at a time) with latency
//! percentiles, the context each run depends on, and a history with
//! baselines and regression events.
//!
//! `DiskBench` checks a request, takes the disk for the run, runs the jobs
//! on a thread while it samples the CPU and temperatures (and stops the run
//! when a zone nears a trip point), then records the run.

mod aio;
pub mod context;
pub mod engine;
pub mod fio_json;
pub mod history;
pub mod job;
pub mod presets;
pub mod text;
mod uring;

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde::Deserialize;
use sha2::Digest;

use crate::disks::{DiskError, Disks};
use crate::host::Host;
use crate::inventory;
use crate::store::{DiskRunRow, Severity, Store, StoreError};
use crate::validate::Invalid;
use context::{DeviceContext, FilesystemContext, RunContext, Sampler};
use engine::Target;
pub use engine::{Control, EngineError, JobResult};
pub use history::{Comparison, DiskRun, Progress, Status};
use job::Job;

/// How often the CPU and temperatures are read during a run.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum DiskBenchError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Disks(#[from] DiskError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The target or the run is taken: another run, a mount.
    #[error(transparent)]
    Busy(Invalid),
    #[error("no disk benchmark run #{0}")]
    NotFound(i64),
    #[error("stored run #{id} is unreadable: {message}")]
    Corrupt { id: i64, message: String },
}

/// What to run and where.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskRequest {
    pub preset: Option<String>,
    /// A fio job file's text.
    pub jobfile: Option<String>,
    /// A directory on a mounted filesystem, or a blank block device.
    pub target: String,
    /// For a block device: its path again, to confirm it may be overwritten.
    pub confirm_device: Option<String>,
}

/// A run that has started: its id, and its record once it ends.
pub struct Started {
    pub id: i64,
    pub done: tokio::sync::oneshot::Receiver<DiskRun>,
}

/// A run in this process: its switch, where it is, and why it stopped.
struct Live {
    control: Arc<Control>,
    disk: String,
    progress: Mutex<Progress>,
    stopped: Mutex<Option<(Status, String)>>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What holds the target for a run: a lock on the directory, or the
/// device opened exclusively (the kernel then refuses to mount it).
type Claim = std::fs::File;

pub struct DiskBench {
    host: Host,
    disks: Arc<Disks>,
    store: Arc<Store>,
    regression_percent: u8,
    live: Mutex<HashMap<i64, Arc<Live>>>,
    /// Disks under test in this process (one run per disk).
    busy: Arc<Mutex<HashSet<String>>>,
}

/// A disk held for one run; released when dropped.
struct Reserved {
    set: Arc<Mutex<HashSet<String>>>,
    key: String,
}

impl Drop for Reserved {
    fn drop(&mut self) {
        locked(&self.set).remove(&self.key);
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl DiskBench {
    pub fn new(host: Host, disks: Arc<Disks>, store: Arc<Store>, regression_percent: u8) -> Self {
        DiskBench {
            host,
            disks,
            store,
            regression_percent,
            live: Mutex::default(),
            busy: Arc::default(),
        }
    }

    /// Checks the request, takes the target and starts the run on its own
    /// thread. Nothing is written when a check fails.
    pub async fn start(self: &Arc<Self>, request: &DiskRequest) -> Result<Started, DiskBenchError> {
        let (preset, jobfile) = match (&request.preset, &request.jobfile) {
            (Some(name), None) => (Some(name.clone()), presets::jobfile(name)?.to_owned()),
            (None, Some(text)) => (None, text.clone()),
            _ => {
                return Err(Invalid::new("preset", "give either a preset or a job file").into());
            }
        };
        let jobs = job::parse(&jobfile)?;
        let target = PathBuf::from(&request.target);
        if !target.is_absolute() {
            return Err(Invalid::new("target", "must be an absolute path").into());
        }
        let meta = std::fs::metadata(&target)
            .map_err(|e| Invalid::new("target", format!("{}: {e}", target.display())))?;
        let raw_device = meta.file_type().is_block_device();
        if !raw_device && !meta.is_dir() {
            return Err(Invalid::new(
                "target",
                "must be a directory on a mounted filesystem or a blank block device",
            )
            .into());
        }
        let mut context = RunContext {
            kernel: self.host.kernel_release().ok().flatten(),
            board: inventory::board(&self.host).ok().map(|b| b.model),
            ..RunContext::default()
        };
        let list = self.disks.list().await?;
        let (disk_key, device_claim) = if raw_device {
            let (key, claim) = self
                .check_device(request, &target, &jobs, &list, &mut context)
                .await?;
            (key, Some(claim))
        } else {
            let canonical = std::fs::canonicalize(&target)
                .map_err(|e| Invalid::new("target", format!("{}: {e}", target.display())))?;
            let mounts = self
                .host
                .mountinfo()
                .ok()
                .flatten()
                .map(|t| crate::disks::parse::mountinfo(&t))
                .unwrap_or_default();
            let key = describe_dir(&canonical, &meta, &list, &mounts, &mut context)
                .unwrap_or_else(|| format!("path:{}", canonical.display()));
            self.check_space(&canonical, &jobs)?;
            (key, None)
        };
        let reserved = self.reserve(&disk_key)?;
        let claim = match device_claim {
            Some(claim) => claim,
            None => claim_dir(&target)?,
        };
        let preset_key = preset.clone().unwrap_or_else(|| {
            let hash = sha2::Sha256::digest(jobfile.as_bytes());
            format!("jobfile:{}", hex::encode(&hash[..6]))
        });
        let mut run = DiskRun {
            id: 0,
            status: Status::Running,
            preset: preset.clone(),
            jobfile: preset.is_none().then(|| jobfile.clone()),
            target: request.target.clone(),
            raw_device,
            disk: disk_key.clone(),
            started_at: unix_now(),
            finished_at: None,
            progress: None,
            error: None,
            results: Vec::new(),
            summary: None,
            sbc: None,
            context,
            baseline: None,
        };
        let row = DiskRunRow {
            started_at: run.started_at,
            disk: disk_key.clone(),
            preset: preset_key.clone(),
            status: Status::Running.as_str().into(),
            target: request.target.clone(),
        };
        run.id = self.store.add_disk_run(&row, &to_json(&run))?;
        self.store
            .update_disk_run(run.id, Status::Running.as_str(), &to_json(&run))?;
        let live = Arc::new(Live {
            control: Arc::default(),
            disk: disk_key,
            progress: Mutex::new(Progress {
                job_index: 1,
                jobs: jobs.len() as u32,
                job: jobs[0].name.clone(),
                fraction: 0.0,
            }),
            stopped: Mutex::new(None),
        });
        locked(&self.live).insert(run.id, live.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = run.id;
        let bench = self.clone();
        let failed_run = run.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("disk-bench-{id}"))
            .spawn(move || {
                let finished = bench.run_jobs(run, &jobs, &target, &live, &preset_key);
                drop(claim);
                drop(reserved);
                locked(&bench.live).remove(&finished.id);
                let _ = tx.send(finished);
            });
        if let Err(source) = spawned {
            locked(&self.live).remove(&id);
            let mut run = failed_run;
            run.status = Status::Failed;
            run.finished_at = Some(unix_now());
            run.error = Some(format!("cannot start the run's thread: {source}"));
            self.store
                .update_disk_run(id, run.status.as_str(), &to_json(&run))?;
            return Err(EngineError::Io {
                path: PathBuf::from(&request.target),
                source,
            }
            .into());
        }
        Ok(Started { id, done: rx })
    }

    /// Marks `disk` as under test until the returned guard drops; refused
    /// while another run of this process has it.
    fn reserve(&self, disk: &str) -> Result<Reserved, DiskBenchError> {
        let mut busy = locked(&self.busy);
        if !busy.insert(disk.to_owned()) {
            let id = locked(&self.live)
                .iter()
                .find(|(_, live)| live.disk == disk)
                .map_or_else(String::new, |(id, _)| format!(" (run #{id})"));
            return Err(DiskBenchError::Busy(Invalid::new(
                "target",
                format!("a benchmark is already running on this disk{id}"),
            )));
        }
        Ok(Reserved {
            set: self.busy.clone(),
            key: disk.to_owned(),
        })
    }

    /// The checks for a raw device: confirmed, a disk nasd lists, not the
    /// system's, unmounted, without partitions or any signature, and large
    /// enough. Returns the disk's key and the exclusive claim on it.
    async fn check_device(
        &self,
        request: &DiskRequest,
        device: &Path,
        jobs: &[Job],
        list: &crate::disks::DiskList,
        context: &mut RunContext,
    ) -> Result<(String, Claim), DiskBenchError> {
        if request.confirm_device.as_deref() != Some(request.target.as_str()) {
            return Err(Invalid::new(
                "confirm_device",
                format!(
                    "must repeat {}: a benchmark on a device overwrites it",
                    request.target
                ),
            )
            .into());
        }
        let path = device.to_string_lossy();
        let (disk, volume) = list
            .disks
            .iter()
            .find_map(|d| {
                std::iter::once(&d.volume)
                    .chain(d.partitions.iter().map(|p| &p.volume))
                    .find(|v| v.path == path)
                    .map(|v| (d, v))
            })
            .ok_or_else(|| Invalid::new("target", format!("{path} is not a disk nasd lists")))?;
        let refuse = |rule: String| -> DiskBenchError { Invalid::new("target", rule).into() };
        if disk.system {
            return Err(refuse(format!("{path} holds the running system")));
        }
        if disk.read_only {
            return Err(refuse(format!("{path} is read-only")));
        }
        if let Some(m) = &volume.mountpoint {
            return Err(refuse(format!("{path} is mounted at {m}")));
        }
        let whole_disk = volume.path == disk.volume.path;
        if whole_disk && (!disk.partitions.is_empty() || disk.partition_table.is_some()) {
            return Err(refuse(format!(
                "{path} has a partition table: a benchmark never writes to a device that holds data"
            )));
        }
        // Exclusive before the signature probe, so nothing formats or
        // mounts it between the probe and the run.
        let claim = claim_device(device)?;
        let signatures = self.disks.probe_strict(&volume.name).await?;
        if let Some(kind) = signatures.get("TYPE").or(signatures.get("PTTYPE")) {
            return Err(refuse(format!(
                "{path} carries a signature ({kind}): a benchmark never writes to a device that holds data"
            )));
        }
        if !signatures.is_empty() || volume.fs.is_some() {
            return Err(refuse(format!(
                "{path} carries a signature: a benchmark never writes to a device that holds data"
            )));
        }
        let largest = jobs.iter().map(|j| j.size).max().unwrap_or(0);
        if largest > volume.size_bytes {
            return Err(Invalid::new(
                "size",
                format!(
                    "the jobs need {largest} bytes and {path} has {}",
                    volume.size_bytes
                ),
            )
            .into());
        }
        context.device = Some(device_context(disk));
        Ok((disk_key(disk), claim))
    }

    fn check_space(&self, dir: &Path, jobs: &[Job]) -> Result<(), DiskBenchError> {
        let needed: u64 = jobs
            .iter()
            .map(|j| j.size.saturating_mul(u64::from(j.numjobs)))
            .max()
            .unwrap_or(0);
        if let Ok((used, total)) = self.host.filesystem_usage(dir) {
            let free = total.saturating_sub(used);
            if needed.saturating_add(needed / 10) > free {
                return Err(Invalid::new(
                    "size",
                    format!(
                        "the test files need {needed} bytes and {} has {free} free",
                        dir.display()
                    ),
                )
                .into());
            }
        }
        Ok(())
    }

    /// Runs the jobs one after another, watching the CPU and temperatures,
    /// and records the outcome. Runs on its own thread.
    fn run_jobs(
        &self,
        mut run: DiskRun,
        jobs: &[Job],
        target: &Path,
        live: &Live,
        preset_key: &str,
    ) -> DiskRun {
        let target = if run.raw_device {
            Target::Device(target)
        } else {
            Target::Dir(target)
        };
        let read_cpu = || inventory::clusters(&self.host).unwrap_or_default();
        let read_zones = || inventory::thermal_zones(&self.host).unwrap_or_default();
        let mut sampler = Sampler::new(&read_cpu(), &read_zones());
        let n = jobs.len() as f64;
        for (i, job) in jobs.iter().enumerate() {
            *locked(&live.progress) = Progress {
                job_index: i as u32 + 1,
                jobs: jobs.len() as u32,
                job: job.name.clone(),
                fraction: i as f64 / n,
            };
            if let Some(why) = context::too_hot(&read_zones()) {
                locked(&live.stopped).get_or_insert((Status::Aborted, why));
                break;
            }
            if live.control.is_cancelled() {
                break;
            }
            let outcome = std::thread::scope(|scope| {
                let worker = scope.spawn(|| engine::run(job, target, &live.control));
                let mut last_sample = Instant::now();
                while !worker.is_finished() {
                    std::thread::sleep(Duration::from_millis(50));
                    locked(&live.progress).fraction =
                        (i as f64 + job_fraction(job, &live.control)) / n;
                    if last_sample.elapsed() < SAMPLE_EVERY {
                        continue;
                    }
                    last_sample = Instant::now();
                    let zones = read_zones();
                    sampler.sample(&read_cpu(), &zones);
                    if let Some(why) = context::too_hot(&zones) {
                        locked(&live.stopped).get_or_insert((Status::Aborted, why));
                        live.control.cancel();
                    }
                }
                worker.join()
            });
            match outcome {
                Ok(Ok(result)) => run.results.push(result),
                Ok(Err(EngineError::Cancelled)) => break,
                Ok(Err(err)) => {
                    locked(&live.stopped)
                        .get_or_insert((Status::Failed, format!("{}: {err}", job.name)));
                    break;
                }
                Err(_) => {
                    locked(&live.stopped).get_or_insert((
                        Status::Failed,
                        format!("{}: the job's thread panicked", job.name),
                    ));
                    break;
                }
            }
        }
        sampler.finish(&read_zones(), &mut run.context);
        let stopped = locked(&live.stopped).take();
        let stopped = stopped.or_else(|| {
            live.control
                .is_cancelled()
                .then(|| (Status::Cancelled, "cancelled".to_owned()))
        });
        run.finished_at = Some(unix_now());
        match stopped {
            Some((status, why)) => {
                run.status = status;
                run.error = Some(why);
            }
            None => {
                run.status = Status::Done;
                if run.preset.is_some() {
                    run.summary = presets::summary(&run.results);
                    run.sbc = presets::sbc_score(&run.results);
                }
                self.compare_with_baseline(&mut run, preset_key);
            }
        }
        if let Err(err) = self
            .store
            .update_disk_run(run.id, run.status.as_str(), &to_json(&run))
        {
            tracing::error!("disk benchmark #{} not recorded: {err}", run.id);
        }
        run
    }

    fn compare_with_baseline(&self, run: &mut DiskRun, preset_key: &str) {
        let previous: Vec<DiskRun> = self
            .store
            .similar_disk_runs(
                &run.disk,
                preset_key,
                Status::Done.as_str(),
                run.id,
                history::BASELINE_RUNS,
            )
            .unwrap_or_default()
            .iter()
            .filter_map(|doc| serde_json::from_str(doc).ok())
            .collect();
        run.baseline = history::baseline(&run.results, &previous, self.regression_percent);
        if let Some(message) = history::regression_message(run) {
            tracing::warn!("{message}");
            if let Err(err) = self
                .store
                .add_event("bench", Severity::Warning, unix_now(), &message)
            {
                tracing::error!("regression event not recorded: {err}");
            }
        }
    }

    /// Stops a run of this process; its test files are removed.
    pub fn cancel(&self, id: i64) -> Result<(), DiskBenchError> {
        let live = locked(&self.live).get(&id).cloned();
        let Some(live) = live else {
            self.get(id)?;
            return Err(DiskBenchError::Busy(Invalid::new(
                "id",
                format!("run #{id} is not running in this process"),
            )));
        };
        locked(&live.stopped).get_or_insert((Status::Cancelled, "cancelled".into()));
        live.control.cancel();
        Ok(())
    }

    fn with_progress(&self, mut run: DiskRun) -> DiskRun {
        if let Some(live) = locked(&self.live).get(&run.id) {
            run.progress = Some(locked(&live.progress).clone());
        }
        run
    }

    /// The newest `limit` runs, newest first; running ones with progress.
    pub fn list(&self, limit: u32) -> Result<Vec<DiskRun>, DiskBenchError> {
        Ok(self
            .store
            .disk_runs(limit)?
            .iter()
            .filter_map(|doc| match serde_json::from_str::<DiskRun>(doc) {
                Ok(run) => Some(self.with_progress(run)),
                Err(err) => {
                    // One damaged record must not hide the others.
                    tracing::warn!("skipping an unreadable disk benchmark record: {err}");
                    None
                }
            })
            .collect())
    }

    pub fn get(&self, id: i64) -> Result<DiskRun, DiskBenchError> {
        let doc = self
            .store
            .disk_run(id)?
            .ok_or(DiskBenchError::NotFound(id))?;
        Ok(self.with_progress(parse(id, &doc)?))
    }

    pub fn compare(&self, a: i64, b: i64) -> Result<Comparison, DiskBenchError> {
        Ok(history::compare(&self.get(a)?, &self.get(b)?))
    }

    /// At start: runs a dead process left as running are marked
    /// interrupted and their test files removed, unless another process
    /// (a `nasd bench disk` on the command line) still holds the target.
    pub fn recover_interrupted(&self) -> Result<usize, DiskBenchError> {
        let mut recovered = 0;
        for (id, target) in self.store.disk_runs_with_status(Status::Running.as_str())? {
            if locked(&self.live).contains_key(&id) {
                continue;
            }
            let path = Path::new(&target);
            let is_device = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device());
            let claim = if is_device {
                claim_device(path)
            } else {
                claim_dir(path)
            };
            // Held elsewhere: still running. Any other error (the disk is
            // gone) leaves nothing to clean.
            if let Err(DiskBenchError::Busy(_)) = claim {
                continue;
            }
            let mut run = self.get(id)?;
            run.status = Status::Interrupted;
            run.finished_at = Some(unix_now());
            run.error = Some("nasd stopped during the run; its test files were removed".into());
            self.store
                .update_disk_run(id, run.status.as_str(), &to_json(&run))?;
            recovered += 1;
        }
        Ok(recovered)
    }
}

/// Within one job, 0 to 1: by time for a time-based job, else by
/// requests; 0 while its files are laid out.
fn job_fraction(job: &Job, control: &Control) -> f64 {
    let Some(running) = control.running_for() else {
        return 0.0;
    };
    let fraction = if job.time_based {
        let total = job.ramp + job.runtime.unwrap_or_default();
        running.as_secs_f64() / total.as_secs_f64().max(0.001)
    } else {
        let requests = (job.size / job.block_size).saturating_mul(u64::from(job.numjobs));
        control.completed() as f64 / requests.max(1) as f64
    };
    fraction.clamp(0.0, 0.99)
}

fn to_json(run: &DiskRun) -> String {
    // A DiskRun holds only strings, numbers and lists: it always serializes.
    serde_json::to_string(run).unwrap_or_default()
}

fn parse(id: i64, doc: &str) -> Result<DiskRun, DiskBenchError> {
    serde_json::from_str(doc).map_err(|e| DiskBenchError::Corrupt {
        id,
        message: e.to_string(),
    })
}

fn device_context(disk: &crate::disks::Disk) -> DeviceContext {
    DeviceContext {
        name: disk.volume.name.clone(),
        model: disk.model.clone(),
        serial: disk.serial.clone(),
        transport: format!("{:?}", disk.transport).to_lowercase(),
        rotational: disk.rotational,
        usb_speed_mbps: disk.usb_speed_mbps,
        usb_degraded: disk.usb_degraded,
    }
}

/// What a disk is known by across reboots and renames: its serial, its
/// WWN, a loop device's backing file, else its name (marked as such).
fn disk_key(disk: &crate::disks::Disk) -> String {
    disk.serial
        .clone()
        .or_else(|| disk.wwn.clone())
        .or_else(|| disk.backing_file.clone())
        .unwrap_or_else(|| format!("name:{}", disk.volume.name))
}

/// Fills the filesystem and device of the mount that holds `dir`: the
/// mount with `dir`'s device number (so a tmpfs or NFS mount below a data
/// disk is not taken for it); returns the disk's key when nasd lists it.
fn describe_dir(
    dir: &Path,
    meta: &std::fs::Metadata,
    list: &crate::disks::DiskList,
    mounts: &[crate::disks::parse::MountEntry],
    context: &mut RunContext,
) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = meta.dev();
    let number = format!("{}:{}", rustix::fs::major(dev), rustix::fs::minor(dev));
    let mount = mounts
        .iter()
        .filter(|m| m.major_minor == number && dir.starts_with(&m.mountpoint))
        .max_by_key(|m| m.mountpoint.len())?;
    context.filesystem = Some(FilesystemContext {
        fs_type: mount.fs_type.clone(),
        mountpoint: mount.mountpoint.clone(),
        mount_options: mount.options.clone(),
    });
    let disk = list.disks.iter().find(|d| {
        std::iter::once(&d.volume)
            .chain(d.partitions.iter().map(|p| &p.volume))
            .any(|v| v.mountpoint.as_deref() == Some(mount.mountpoint.as_str()))
    })?;
    context.device = Some(device_context(disk));
    Some(disk_key(disk))
}

/// Takes a directory for one run: a lock on the directory itself (no file
/// of ours is left there), held until the returned handle drops and
/// released by the kernel if the process dies. A second run there is
/// refused, and the first thing a run does is remove what a killed one
/// left behind.
fn claim_dir(target: &Path) -> Result<Claim, DiskBenchError> {
    let io = |source| EngineError::Io {
        path: target.to_path_buf(),
        source,
    };
    let dir = std::fs::File::open(target).map_err(io)?;
    match dir.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(DiskBenchError::Busy(Invalid::new(
                "target",
                "a disk benchmark is already running there",
            )));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io(e).into()),
    }
    let removed = engine::remove_leftovers(target)?;
    if removed > 0 {
        tracing::info!(
            "removed {removed} test files an interrupted benchmark left in {}",
            target.display()
        );
    }
    Ok(dir)
}

/// Opens a block device exclusively: refused while it is mounted, part of
/// an array, or in another run.
fn claim_device(device: &Path) -> Result<Claim, DiskBenchError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(device)
        .map_err(|source| {
            if source.raw_os_error() == Some(libc::EBUSY) {
                Invalid::new(
                    "target",
                    format!(
                        "{} is in use (mounted, part of an array, or in another run)",
                        device.display()
                    ),
                )
                .into()
            } else {
                EngineError::Io {
                    path: device.to_path_buf(),
                    source,
                }
                .into()
            }
        })
}
