//! Disk benchmarks that give figures people can put beside fio's: fio's
//! job files, and a native engine (Linux AIO through raw syscalls, or one
//! request at a time) with latency percentiles.
//!
//! So far: the job model, the engine, the presets and the command line. The
//! run's context, history, the API and raw devices are still to come.

mod aio;
pub mod engine;
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
    jobs.iter()
        .map(|j| engine::run(j, target).map_err(DiskBenchError::from))
        .collect()
}
