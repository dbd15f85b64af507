//! Disk benchmarks that give figures people can put beside fio's: fio's
//! job files, and a native engine (Linux AIO through raw syscalls, or one
//! request at a time) with latency percentiles.
//!
//! So far: the job model, the engine, the presets and the command line. The
//! run's context, history, the API and raw devices are still to come.

mod aio;
pub mod engine;
pub mod fio_json;
pub mod job;
pub mod presets;

use std::path::Path;

use crate::host::Host;
use crate::validate::Invalid;
pub use engine::{EngineError, JobResult};

#[derive(Debug, thiserror::Error)]
pub enum DiskBenchError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Runs the jobs of a job file in `target`, a directory on a mounted
/// filesystem, after checking there is room for their files.
pub fn run_jobfile(
    host: &Host,
    jobfile: &str,
    target: &Path,
) -> Result<Vec<JobResult>, DiskBenchError> {
    let jobs = job::parse(jobfile)?;
    let meta = std::fs::metadata(target)
        .map_err(|e| Invalid::new("target", format!("{}: {e}", target.display())))?;
    if !meta.is_dir() {
        return Err(Invalid::new(
            "target",
            "must be a directory on a mounted filesystem (raw devices are not supported yet)",
        )
        .into());
    }
    let needed: u64 = jobs
        .iter()
        .map(|j| j.size.saturating_mul(u64::from(j.numjobs)))
        .max()
        .unwrap_or(0);
    if let Ok((used, total)) = host.filesystem_usage(target) {
        let free = total.saturating_sub(used);
        if needed.saturating_add(needed / 10) > free {
            return Err(Invalid::new(
                "size",
                format!(
                    "the test files need {needed} bytes and {} has {free} free",
                    target.display()
                ),
            )
            .into());
        }
    }
    let _claim = claim(target)?;
    jobs.iter()
        .map(|j| engine::run(j, target).map_err(DiskBenchError::from))
        .collect()
}

/// Takes `target` for one run: a lock on the directory itself (no file of
/// ours is left there), held until the returned handle drops and released
/// by the kernel if the process dies. A second run there is refused, and
/// the first thing a run does is remove what a killed one left behind.
fn claim(target: &Path) -> Result<std::fs::File, DiskBenchError> {
    let io = |source| EngineError::Io {
        path: target.to_path_buf(),
        source,
    };
    let dir = std::fs::File::open(target).map_err(io)?;
    match dir.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(Invalid::new("target", "a disk benchmark is already running there").into());
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
