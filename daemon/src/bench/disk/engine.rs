//! Runs a job: one thread and one file per `numjobs`, each keeping
//! `iodepth` requests in flight (native AIO) or one at a time (sync).
//! Latency is measured per request, from submission to completion.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use super::aio::{Context, IoEvent, Iocb};
use super::job::{Engine, Job, Pattern};

/// Buffers aligned for O_DIRECT on any device these boards have.
const ALIGN: usize = 4096;
/// The longest latency recorded exactly: an hour, in nanoseconds.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("this kernel has no native AIO")]
    NoAio,
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Unsupported(String),
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> EngineError + '_ {
    move |source| EngineError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A zeroed buffer aligned to ALIGN bytes.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

// The buffer is plain memory owned by one thread at a time.
unsafe impl Send for Aligned {}

impl Aligned {
    fn new(len: usize) -> Self {
        let layout = std::alloc::Layout::from_size_align(len.max(ALIGN), ALIGN)
            .unwrap_or_else(|_| std::alloc::Layout::new::<[u8; ALIGN]>());
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Aligned { ptr, layout }
    }

    fn slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes while self lives.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in new().
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// xorshift64*: a fast, repeatable stream of offsets.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Where the next request goes, and whether it reads.
struct Plan {
    pattern: Pattern,
    blocks: u64,
    block_size: u64,
    next_block: u64,
    rwmixread: u64,
    rng: Rng,
}

impl Plan {
    fn next(&mut self) -> (bool, u64) {
        let block = if self.pattern.random() {
            self.rng.next() % self.blocks
        } else {
            let b = self.next_block;
            self.next_block = (b + 1) % self.blocks;
            b
        };
        let read = match self.pattern {
            Pattern::Read | Pattern::RandRead => true,
            Pattern::Write | Pattern::RandWrite => false,
            Pattern::RandRw => self.rng.next() % 100 < self.rwmixread,
        };
        (read, block * self.block_size)
    }
}

/// What one direction did.
#[derive(Debug, Clone)]
pub struct Tally {
    pub ios: u64,
    pub bytes: u64,
    pub latency_ns: Histogram<u64>,
}

impl Tally {
    fn new() -> Self {
        Tally {
            ios: 0,
            bytes: 0,
            latency_ns: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3)
                .expect("constant bounds: 1 ns to an hour, 3 significant figures"),
        }
    }

    fn record(&mut self, bytes: u64, latency: Duration) {
        self.ios += 1;
        self.bytes += bytes;
        let ns = u64::try_from(latency.as_nanos())
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_LATENCY_NS);
        let _ = self.latency_ns.record(ns);
    }

    fn merge(&mut self, other: &Tally) {
        self.ios += other.ios;
        self.bytes += other.bytes;
        let _ = self.latency_ns.add(&other.latency_ns);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p99_9: f64,
}

/// One direction's figures, units in the names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Direction {
    pub io_bytes: u64,
    pub ios: u64,
    pub iops: f64,
    pub bw_bytes_per_s: f64,
    pub bw_mib_per_s: f64,
    pub bw_mb_per_s: f64,
    pub lat_us: Latency,
}

impl Direction {
    pub fn from_tally(t: &Tally, seconds: f64) -> Option<Self> {
        if t.ios == 0 || seconds <= 0.0 {
            return None;
        }
        let us = |q: f64| t.latency_ns.value_at_quantile(q) as f64 / 1000.0;
        let bw = t.bytes as f64 / seconds;
        Some(Direction {
            io_bytes: t.bytes,
            ios: t.ios,
            iops: t.ios as f64 / seconds,
            bw_bytes_per_s: bw,
            bw_mib_per_s: bw / f64::from(1u32 << 20),
            bw_mb_per_s: bw / 1e6,
            lat_us: Latency {
                mean: t.latency_ns.mean() / 1000.0,
                p50: us(0.5),
                p90: us(0.9),
                p99: us(0.99),
                p99_9: us(0.999),
            },
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobResult {
    pub job: String,
    /// The backend that ran: `libaio`, or `sync` (also when native AIO
    /// was asked for but the kernel has none).
    pub engine: &'static str,
    /// Measured seconds (after the ramp).
    pub seconds: f64,
    pub read: Option<Direction>,
    pub write: Option<Direction>,
}

/// Writes the file in full (reads of holes never touch the disk).
fn lay_out(path: &Path, size: u64) -> Result<(), EngineError> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= size) {
        return Ok(());
    }
    let mut file = File::create(path).map_err(io_err(path))?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Not zeros: some devices and filesystems compress them.
    for word in chunk.chunks_mut(8) {
        word.copy_from_slice(&rng.next().to_le_bytes()[..word.len()]);
    }
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        file.write_all(&chunk[..n]).map_err(io_err(path))?;
        left -= n as u64;
    }
    file.sync_all().map_err(io_err(path))
}

fn open(path: &Path, direct: bool) -> Result<File, EngineError> {
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    options.open(path).map_err(|source| {
        if direct && source.raw_os_error() == Some(libc::EINVAL) {
            EngineError::Unsupported(format!(
                "{}: this filesystem does not do direct I/O; run with direct=0",
                path.display()
            ))
        } else {
            EngineError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

struct Worker {
    file: File,
    path: PathBuf,
    plan: Plan,
    block_size: usize,
    started: Instant,
    ramp: Duration,
    /// Ends the job: a deadline, or a number of requests.
    deadline: Option<Instant>,
    budget: u64,
    read: Tally,
    write: Tally,
}

impl Worker {
    fn more(&mut self, issued: u64) -> bool {
        match self.deadline {
            Some(deadline) => Instant::now() < deadline,
            None => issued < self.budget,
        }
    }

    /// Tallies a request submitted at `t0` and completed at `done`, unless
    /// it was submitted during the ramp.
    fn complete(&mut self, read: bool, t0: Instant, done: Instant) {
        if t0.duration_since(self.started) < self.ramp {
            return;
        }
        let tally = if read {
            &mut self.read
        } else {
            &mut self.write
        };
        tally.record(self.block_size as u64, done - t0);
    }

    fn run_sync(&mut self) -> Result<(), EngineError> {
        let mut buf = Aligned::new(self.block_size);
        let mut issued = 0;
        while self.more(issued) {
            let (read, offset) = self.plan.next();
            let t0 = Instant::now();
            let data = &mut buf.slice()[..self.block_size];
            let result = if read {
                self.file.read_exact_at(data, offset)
            } else {
                self.file.write_all_at(data, offset)
            };
            result.map_err(io_err(&self.path))?;
            let done = Instant::now();
            issued += 1;
            self.complete(read, t0, done);
        }
        Ok(())
    }

    fn run_aio(&mut self, depth: usize) -> Result<(), EngineError> {
        let ctx = Context::new(depth as u32).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOSYS) {
                EngineError::NoAio
            } else {
                EngineError::Io {
                    path: self.path.clone(),
                    source: e,
                }
            }
        })?;
        let fd = self.file.as_raw_fd();
        let mut buffers: Vec<Aligned> = (0..depth).map(|_| Aligned::new(self.block_size)).collect();
        let mut iocbs = vec![Iocb::default(); depth];
        // Per slot: when it was submitted, and whether it reads.
        let mut slots: Vec<(Instant, bool)> = vec![(Instant::now(), true); depth];
        let mut events = vec![IoEvent::default(); depth];
        let mut issued = 0u64;
        let mut in_flight = 0usize;
        let mut pending: Vec<usize> = (0..depth).collect();
        loop {
            let mut batch: Vec<*mut Iocb> = Vec::with_capacity(pending.len());
            for slot in pending.drain(..) {
                if !self.more(issued) {
                    break;
                }
                let (read, offset) = self.plan.next();
                iocbs[slot] = Iocb::prepare(
                    fd,
                    !read,
                    buffers[slot].ptr,
                    self.block_size as u64,
                    offset,
                    slot as u64,
                );
                slots[slot] = (Instant::now(), read);
                batch.push(&mut iocbs[slot]);
                issued += 1;
            }
            let mut submitted = 0;
            while submitted < batch.len() {
                submitted += ctx
                    .submit(&mut batch[submitted..])
                    .map_err(io_err(&self.path))?;
            }
            in_flight += batch.len();
            if in_flight == 0 {
                return Ok(());
            }
            let n = ctx.reap(1, &mut events).map_err(io_err(&self.path))?;
            let done = Instant::now();
            for event in &events[..n] {
                let slot = event.data as usize;
                if event.res != self.block_size as i64 {
                    let source = if event.res < 0 {
                        std::io::Error::from_raw_os_error(-event.res as i32)
                    } else {
                        std::io::Error::other(format!("short transfer of {} bytes", event.res))
                    };
                    return Err(EngineError::Io {
                        path: self.path.clone(),
                        source,
                    });
                }
                let (t0, read) = slots[slot];
                self.complete(read, t0, done);
                pending.push(slot);
            }
            in_flight -= n;
            // Keep the buffers alive until every request has completed.
            let _ = &mut buffers;
        }
    }
}

/// Every test file's name starts with this, so a killed run's files can be
/// told from the user's.
const FILE_PREFIX: &str = "nasd-bench.";

/// Removes test files a killed run left in `dir`; only call it while no
/// other run uses `dir`. Returns how many were removed.
pub fn remove_leftovers(dir: &Path) -> Result<usize, EngineError> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).map_err(io_err(dir))?.flatten() {
        let is_test_file = entry.file_name().to_string_lossy().starts_with(FILE_PREFIX)
            && entry.file_type().is_ok_and(|t| t.is_file());
        if is_test_file {
            std::fs::remove_file(entry.path()).map_err(io_err(&entry.path()))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Runs `job` with its files in `dir`; the files are removed afterwards.
pub fn run(job: &Job, dir: &Path) -> Result<JobResult, EngineError> {
    let files: Vec<PathBuf> = (0..job.numjobs)
        .map(|i| {
            dir.join(format!(
                "{FILE_PREFIX}{}.{i}",
                job.name.replace(['/', '\0'], "_")
            ))
        })
        .collect();
    let result = run_in(job, &files);
    for file in &files {
        let _ = std::fs::remove_file(file);
    }
    result
}

fn run_in(job: &Job, files: &[PathBuf]) -> Result<JobResult, EngineError> {
    let blocks = job.size / job.block_size;
    for path in files {
        lay_out(path, blocks * job.block_size)?;
    }
    let block_size = usize::try_from(job.block_size).map_err(|_| {
        EngineError::Unsupported("the block size does not fit in memory here".into())
    })?;
    let started = Instant::now();
    let deadline = job
        .time_based
        .then(|| started + job.ramp + job.runtime.unwrap_or_default());
    let handles: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let file = open(path, job.direct)?;
            let seed = if job.randrepeat {
                0x1234_5678_9ABC_DEF1 ^ (i as u64 + 1)
            } else {
                started.elapsed().as_nanos() as u64 ^ (i as u64 + 1) ^ 0xDEAD_BEEF_CAFE_F00D
            };
            let mut worker = Worker {
                file,
                path: path.clone(),
                plan: Plan {
                    pattern: job.pattern,
                    blocks: blocks.max(1),
                    block_size: job.block_size,
                    next_block: 0,
                    rwmixread: u64::from(job.rwmixread),
                    rng: Rng(seed.max(1)),
                },
                block_size,
                started,
                ramp: job.ramp,
                deadline,
                budget: blocks,
                read: Tally::new(),
                write: Tally::new(),
            };
            let engine = job.engine;
            let depth = job.iodepth.max(1) as usize;
            Ok(std::thread::spawn(move || {
                let ran = match engine {
                    Engine::LibAio => match worker.run_aio(depth) {
                        // A kernel without AIO (or qemu-user): one at a time.
                        Err(EngineError::NoAio) => worker.run_sync().map(|()| "sync"),
                        other => other.map(|()| "libaio"),
                    },
                    Engine::Sync => worker.run_sync().map(|()| "sync"),
                };
                ran.map(|used| (used, worker.read, worker.write))
            }))
        })
        .collect::<Result<_, EngineError>>()?;
    let (mut read, mut write) = (Tally::new(), Tally::new());
    let mut engine = "sync";
    for handle in handles {
        let (used, r, w) = handle
            .join()
            .map_err(|_| EngineError::Unsupported("a benchmark thread failed".into()))??;
        engine = used;
        read.merge(&r);
        write.merge(&w);
    }
    let seconds = started.elapsed().saturating_sub(job.ramp).as_secs_f64();
    Ok(JobResult {
        job: job.name.clone(),
        engine,
        seconds,
        read: Direction::from_tally(&read, seconds),
        write: Direction::from_tally(&write, seconds),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_latencies() {
        let mut t = Tally::new();
        // 1..=1000 microseconds, once each.
        for us in 1..=1000u64 {
            t.record(4096, Duration::from_micros(us));
        }
        let d = Direction::from_tally(&t, 2.0).unwrap();
        assert_eq!(d.ios, 1000);
        assert_eq!(d.iops, 500.0);
        assert_eq!(d.bw_bytes_per_s, 2_048_000.0);
        assert!((d.bw_mb_per_s - 2.048).abs() < 1e-9);
        assert!((d.bw_mib_per_s - 2_048_000.0 / 1_048_576.0).abs() < 1e-9);
        // HDR histograms keep 3 significant figures.
        assert!((d.lat_us.p50 - 500.0).abs() <= 1.0, "{}", d.lat_us.p50);
        assert!((d.lat_us.p99 - 990.0).abs() <= 1.0, "{}", d.lat_us.p99);
        assert!((d.lat_us.mean - 500.5).abs() <= 1.0, "{}", d.lat_us.mean);
        assert!(Direction::from_tally(&Tally::new(), 1.0).is_none());
    }

    #[test]
    fn sequential_offsets_wrap_and_random_ones_repeat() {
        let plan = |pattern| Plan {
            pattern,
            blocks: 3,
            block_size: 4096,
            next_block: 0,
            rwmixread: 75,
            rng: Rng(7),
        };
        let mut seq = plan(Pattern::Read);
        let offsets: Vec<u64> = (0..4).map(|_| seq.next().1).collect();
        assert_eq!(offsets, [0, 4096, 8192, 0]);
        let (mut a, mut b) = (plan(Pattern::RandRw), plan(Pattern::RandRw));
        let first: Vec<_> = (0..50).map(|_| a.next()).collect();
        assert_eq!(
            first,
            (0..50).map(|_| b.next()).collect::<Vec<_>>(),
            "randrepeat"
        );
        assert!(
            first
                .iter()
                .all(|(_, off)| off % 4096 == 0 && *off < 3 * 4096)
        );
        let reads = first.iter().filter(|(read, _)| *read).count();
        assert!((25..50).contains(&reads), "about 75 % reads: {reads}");
    }

    #[test]
    fn a_2tb_job_sizes_in_u64() {
        // On armv7 usize is 32 bits: the block count and offsets are u64.
        let blocks = (2u64 << 40) / 4096;
        let mut p = Plan {
            pattern: Pattern::RandRead,
            blocks,
            block_size: 4096,
            next_block: 0,
            rwmixread: 0,
            rng: Rng(3),
        };
        assert!(
            (0..1000)
                .map(|_| p.next().1)
                .any(|off| off > u64::from(u32::MAX))
        );
    }
}
