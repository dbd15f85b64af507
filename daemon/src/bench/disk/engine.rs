//! Runs a job: one thread and one file per `numjobs`, each keeping
//! `iodepth` requests in flight (native AIO) or one at a time (sync).
//! Latency is measured per request, from submission to completion.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::job::{Engine, Job, Pattern};

/// Buffers aligned for O_DIRECT on any device these boards have.
const ALIGN: usize = 4096;
/// The longest latency recorded exactly: an hour, in nanoseconds.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cancelled")]
    Cancelled,
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

/// A buffer aligned to ALIGN bytes, full of pseudo-random bytes: writes of
/// zeros would flatter compressing filesystems and SSD controllers.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

// The buffer is plain memory owned by one thread at a time.
unsafe impl Send for Aligned {}

impl Aligned {
    fn new(len: usize) -> Self {
        let layout = std::alloc::Layout::from_size_align(len.max(ALIGN), ALIGN)
            .expect("job files cap buffers at 256 MiB, far below isize::MAX");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let mut buffer = Aligned { ptr, layout };
        fill_random(buffer.slice());
        buffer
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

/// Pseudo-random bytes: not zeros, which some devices compress.
fn fill_random(buf: &mut [u8]) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for word in buf.chunks_mut(8) {
        word.copy_from_slice(&rng.next().to_le_bytes()[..word.len()]);
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

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p99_9: f64,
}

/// One direction's figures, units in the names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    pub job: String,
    /// The backend that ran: `io_uring`, `libaio`, or `sync` (also when
    /// the asked one is missing from the kernel).
    pub engine: String,
    /// False when the job asked for direct I/O on a filesystem that has
    /// none: it then ran buffered, with the file's cache dropped first.
    pub direct: bool,
    /// Measured seconds (after the ramp).
    pub seconds: f64,
    pub read: Option<Direction>,
    pub write: Option<Direction>,
}

/// Creates a test file anew. Never through a symlink or over a file that
/// is already there: nasd runs as root and the directory may be a share
/// whose users could plant a link to a system file or a disk.
fn create(path: &Path) -> Result<File, EngineError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io_err(path))
}

/// Writes `size` bytes (reads of holes never touch the disk), stopping
/// when the run is cancelled.
fn lay_out(file: &File, path: &Path, size: u64, control: &Control) -> Result<(), EngineError> {
    let mut chunk = vec![0u8; 1 << 20];
    fill_random(&mut chunk);
    let mut offset = 0;
    while offset < size {
        if control.is_cancelled() {
            return Err(EngineError::Cancelled);
        }
        let n = (size - offset).min(chunk.len() as u64) as usize;
        file.write_all_at(&chunk[..n], offset)
            .map_err(io_err(path))?;
        offset += n as u64;
    }
    file.sync_all().map_err(io_err(path))
}

/// Turns on direct I/O for an open file; false where the filesystem has
/// none (some FUSE ones).
fn set_direct(file: &File, path: &Path) -> Result<bool, EngineError> {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    let flags = fcntl_getfl(file).map_err(|e| io_err(path)(e.into()))?;
    match fcntl_setfl(file, flags | OFlags::DIRECT) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::INVAL) => Ok(false),
        Err(e) => Err(io_err(path)(e.into())),
    }
}

/// Opens a block device for a raw run.
fn open_device(path: &Path, direct: bool) -> Result<File, EngineError> {
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    options.open(path).map_err(io_err(path))
}

/// A kernel queue of asynchronous requests (native AIO or io_uring).
pub trait Queue {
    /// Queues a read or write of `len` bytes at `offset` through `buf`,
    /// tagged with `slot`.
    ///
    /// # Safety
    /// `buf` must stay valid for `len` bytes until the request is reaped
    /// or `in_flight` says the kernel is done with it.
    unsafe fn push(&mut self, slot: usize, write: bool, buf: *mut u8, len: u64, offset: u64);
    /// Hands what was pushed to the kernel.
    fn submit(&mut self) -> std::io::Result<()>;
    /// Waits for completions (at least one, or a short timeout), adding
    /// (slot, bytes transferred or -errno) to `done`.
    fn reap(&mut self, done: &mut Vec<(usize, i64)>) -> std::io::Result<()>;
    /// Requests the kernel has and has not completed: their buffers are
    /// still in use.
    fn in_flight(&self) -> usize;
}

/// Shared between a run and whoever watches it: a cancel switch, and the
/// requests completed so far in the current job (for progress).
#[derive(Debug, Default)]
pub struct Control {
    cancelled: AtomicBool,
    completed: AtomicU64,
    /// When the current job's I/O began (after its files were laid out).
    running_since: std::sync::Mutex<Option<Instant>>,
}

impl Control {
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Requests completed in the current job.
    pub fn completed(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    /// How long the current job has done I/O; None while it prepares.
    pub fn running_for(&self) -> Option<Duration> {
        self.running_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .map(|t| t.elapsed())
    }

    fn set_running_since(&self, at: Option<Instant>) {
        *self
            .running_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = at;
    }
}

struct Worker {
    file: File,
    path: PathBuf,
    plan: Plan,
    block_size: usize,
    started: Instant,
    ramp: Duration,
    /// Ends the job: a deadline, a number of requests, or both (fio's
    /// runtime also caps a job that is not time_based).
    deadline: Option<Instant>,
    budget: Option<u64>,
    control: Arc<Control>,
    /// Set when a sibling thread of the same job failed.
    stop: Arc<AtomicBool>,
    read: Tally,
    write: Tally,
}

impl Worker {
    fn more(&mut self, issued: u64) -> bool {
        if self.control.is_cancelled() || self.stop.load(Ordering::Relaxed) {
            return false;
        }
        self.budget.is_none_or(|b| issued < b) && self.deadline.is_none_or(|d| Instant::now() < d)
    }

    /// Tallies a request submitted at `t0` and completed at `done`, unless
    /// it was submitted during the ramp.
    fn complete(&mut self, read: bool, t0: Instant, done: Instant) {
        self.control.completed.fetch_add(1, Ordering::Relaxed);
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

    /// Keeps up to `depth` requests in flight through `queue`. On an error
    /// it stops issuing and waits for what the kernel still has, since
    /// those requests write into `buffers`.
    fn run_queued(&mut self, queue: &mut impl Queue, depth: usize) -> Result<(), EngineError> {
        let buffers: Vec<Aligned> = (0..depth).map(|_| Aligned::new(self.block_size)).collect();
        let result = self.keep_full(queue, &buffers);
        let mut done = Vec::new();
        while queue.in_flight() > 0 {
            if queue.reap(&mut done).is_err() {
                // The kernel may still write into them: never free them.
                std::mem::forget(buffers);
                return result;
            }
            done.clear();
        }
        result
    }

    fn keep_full(
        &mut self,
        queue: &mut impl Queue,
        buffers: &[Aligned],
    ) -> Result<(), EngineError> {
        let depth = buffers.len();
        // Per slot: when it was submitted, and whether it reads.
        let mut slots: Vec<(Instant, bool)> = vec![(Instant::now(), true); depth];
        let mut done = Vec::with_capacity(depth);
        let mut issued = 0u64;
        let mut free: Vec<usize> = (0..depth).collect();
        loop {
            while let Some(&slot) = free.last() {
                if !self.more(issued) {
                    break;
                }
                free.pop();
                let (read, offset) = self.plan.next();
                slots[slot] = (Instant::now(), read);
                // SAFETY: `buffers` outlives every request: run_queued
                // waits until none is in flight before dropping them.
                unsafe {
                    queue.push(
                        slot,
                        !read,
                        buffers[slot].ptr,
                        self.block_size as u64,
                        offset,
                    );
                }
                issued += 1;
            }
            queue.submit().map_err(io_err(&self.path))?;
            if queue.in_flight() == 0 {
                return Ok(());
            }
            queue.reap(&mut done).map_err(io_err(&self.path))?;
            let now = Instant::now();
            for (slot, res) in done.drain(..) {
                if res != self.block_size as i64 {
                    let source = if res < 0 {
                        std::io::Error::from_raw_os_error(-res as i32)
                    } else {
                        std::io::Error::other(format!("short transfer of {res} bytes"))
                    };
                    return Err(EngineError::Io {
                        path: self.path.clone(),
                        source,
                    });
                }
                let (t0, read) = slots[slot];
                self.complete(read, t0, now);
                free.push(slot);
            }
        }
    }

    /// Runs with the asked engine, falling back to what the kernel has:
    /// io_uring, then native AIO, then one request at a time. Returns the
    /// engine that ran.
    fn run(&mut self, engine: Engine, depth: usize) -> Result<&'static str, EngineError> {
        let fd = self.file.as_raw_fd();
        if engine == Engine::IoUring
            && let Ok(mut queue) = super::uring::UringQueue::new(fd, depth)
        {
            return self.run_queued(&mut queue, depth).map(|()| "io_uring");
        }
        if engine != Engine::Sync {
            match super::aio::AioQueue::new(fd, depth) {
                Ok(mut queue) => return self.run_queued(&mut queue, depth).map(|()| "libaio"),
                // A kernel without AIO (or qemu-user): one at a time.
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {}
                Err(e) => return Err(io_err(&self.path)(e)),
            }
        }
        self.run_sync().map(|()| "sync")
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
        // file_type() does not follow links: a planted link goes too.
        let is_test_file = entry.file_name().to_string_lossy().starts_with(FILE_PREFIX)
            && entry
                .file_type()
                .is_ok_and(|t| t.is_file() || t.is_symlink());
        if is_test_file {
            std::fs::remove_file(entry.path()).map_err(io_err(&entry.path()))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Where a job's I/O goes.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// Test files in a directory, written in full first, removed after.
    Dir(&'a Path),
    /// A whole block device (checked blank and confirmed by the caller);
    /// every job thread works on the device itself, as fio's
    /// `filename=/dev/...` does.
    Device(&'a Path),
}

/// Runs `job` on `target`; test files are removed afterwards, also when
/// the run fails or is cancelled.
pub fn run(job: &Job, target: Target, control: &Arc<Control>) -> Result<JobResult, EngineError> {
    control.completed.store(0, Ordering::Relaxed);
    control.set_running_since(None);
    match target {
        Target::Dir(dir) => {
            let stem = job.filename.as_deref().unwrap_or(&job.name);
            let paths: Vec<PathBuf> = (0..job.numjobs)
                .map(|i| {
                    dir.join(format!(
                        "{FILE_PREFIX}{}.{i}",
                        stem.replace(['/', '\0'], "_")
                    ))
                })
                .collect();
            let result =
                prepare_files(job, &paths, control).and_then(|files| run_on(job, files, control));
            for path in &paths {
                let _ = std::fs::remove_file(path);
            }
            result
        }
        Target::Device(device) => {
            let files = (0..job.numjobs)
                .map(|_| Ok((device.to_path_buf(), open_device(device, job.direct)?)))
                .collect::<Result<Vec<_>, EngineError>>()?;
            run_on(
                job,
                Opened {
                    files,
                    direct: job.direct,
                },
                control,
            )
        }
    }
}

/// The open files of a job, and whether they do direct I/O.
struct Opened {
    files: Vec<(PathBuf, File)>,
    direct: bool,
}

/// Creates each file; lays it out in full unless the job only writes it
/// sequentially (as dd and iozone's write test make a new file); turns on
/// direct I/O where asked and the filesystem has it.
fn prepare_files(job: &Job, paths: &[PathBuf], control: &Control) -> Result<Opened, EngineError> {
    let size = (job.size / job.block_size) * job.block_size;
    let mut files = Vec::with_capacity(paths.len());
    for path in paths {
        let file = create(path)?;
        if job.pattern != Pattern::Write {
            lay_out(&file, path, size, control)?;
        }
        files.push((path.clone(), file));
    }
    let mut direct = job.direct;
    for (path, file) in files.iter().filter(|_| job.direct) {
        if !set_direct(file, path)? {
            direct = false;
            // Buffered, then: reads come from the disk, not from what
            // lay_out just wrote.
            drop_cached(file);
        }
    }
    Ok(Opened { files, direct })
}

fn run_on(job: &Job, opened: Opened, control: &Arc<Control>) -> Result<JobResult, EngineError> {
    let blocks = job.size / job.block_size;
    let block_size = usize::try_from(job.block_size)
        .ok()
        .filter(|&b| u32::try_from(b).is_ok())
        .ok_or_else(|| EngineError::Unsupported("the block size must be below 4 GiB".into()))?;
    // Without direct I/O, one request at a time (queued AIO on buffered
    // files runs synchronously anyway).
    let engine = if job.direct && !opened.direct {
        Engine::Sync
    } else {
        job.engine
    };
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    control.set_running_since(Some(started));
    let end = started + job.ramp + job.runtime.unwrap_or_default();
    let deadline = (job.time_based || job.runtime.is_some()).then_some(end);
    let wall_clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut handles = Vec::with_capacity(opened.files.len());
    for (i, (path, file)) in opened.files.into_iter().enumerate() {
        let seed = if job.randrepeat {
            0x1234_5678_9ABC_DEF1 ^ (i as u64 + 1)
        } else {
            wall_clock ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        };
        let mut worker = Worker {
            file,
            path,
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
            budget: (!job.time_based).then_some(blocks),
            control: control.clone(),
            stop: stop.clone(),
            read: Tally::new(),
            write: Tally::new(),
        };
        let depth = job.iodepth.max(1) as usize;
        let end_fsync = job.end_fsync;
        let spawned = std::thread::Builder::new().spawn(move || {
            let ran = worker.run(engine, depth).and_then(|used| {
                if end_fsync {
                    worker.file.sync_all().map_err(io_err(&worker.path))?;
                }
                Ok(used)
            });
            if ran.is_err() {
                // The siblings stop too: the job has failed.
                worker.stop.store(true, Ordering::Relaxed);
            }
            ran.map(|used| (used, worker.read, worker.write))
        });
        match spawned {
            Ok(handle) => handles.push(handle),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                join_all(handles);
                return Err(EngineError::Unsupported(format!(
                    "cannot start a job thread: {e}"
                )));
            }
        }
    }
    let outcomes = join_all(handles);
    let (mut read, mut write) = (Tally::new(), Tally::new());
    let mut used = "sync";
    for outcome in outcomes {
        let (engine, r, w) = outcome?;
        used = engine;
        read.merge(&r);
        write.merge(&w);
    }
    if control.is_cancelled() {
        return Err(EngineError::Cancelled);
    }
    let seconds = started.elapsed().saturating_sub(job.ramp).as_secs_f64();
    Ok(JobResult {
        job: job.name.clone(),
        engine: used.to_owned(),
        direct: opened.direct,
        seconds,
        read: Direction::from_tally(&read, seconds),
        write: Direction::from_tally(&write, seconds),
    })
}

type Outcome = Result<(&'static str, Tally, Tally), EngineError>;

/// Waits for every thread of a job, so none keeps writing after the job
/// returns (a raw device is released for mounting then).
fn join_all(handles: Vec<std::thread::JoinHandle<Outcome>>) -> Vec<Outcome> {
    handles
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| {
                Err(EngineError::Unsupported("a benchmark thread failed".into()))
            })
        })
        .collect()
}

/// Drops the page cache of `file` (written by lay_out and synced).
fn drop_cached(file: &File) {
    // SAFETY: a plain advice call on an open descriptor.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
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

    fn small_job(engine: Engine) -> Job {
        Job {
            name: "small".into(),
            pattern: Pattern::RandRw,
            block_size: 4096,
            iodepth: 4,
            size: 1 << 20,
            engine,
            direct: true,
            ..Job::default()
        }
    }

    #[test]
    fn a_small_job_runs_on_whatever_the_kernel_offers() {
        // Under qemu-user (the ARM test runs) io_uring and AIO are missing
        // and a tmpfs has no O_DIRECT: the fallbacks run instead.
        let dir = tempfile::tempdir().unwrap();
        for engine in [Engine::IoUring, Engine::LibAio, Engine::Sync] {
            let r = run(&small_job(engine), Target::Dir(dir.path()), &Arc::default()).unwrap();
            let ios = r.read.as_ref().map_or(0, |d| d.ios) + r.write.as_ref().map_or(0, |d| d.ios);
            assert_eq!(ios, 256, "{engine:?}: one pass over 1 MiB in 4 KiB");
            // On x86_64 (not under qemu) the kernel has all three.
            if cfg!(target_arch = "x86_64") && r.direct {
                let asked = match engine {
                    Engine::IoUring => "io_uring",
                    Engine::LibAio => "libaio",
                    Engine::Sync => "sync",
                };
                assert_eq!(r.engine, asked);
            }
        }
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[test]
    fn a_planted_link_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = dir.path().join("nasd-bench.small.0");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = run(
            &small_job(Engine::Sync),
            Target::Dir(dir.path()),
            &Arc::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("exists"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // The leftover sweep takes links too.
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert_eq!(remove_leftovers(dir.path()).unwrap(), 1);
        assert!(victim.exists() && std::fs::symlink_metadata(&link).is_err());
    }

    #[test]
    fn a_sequential_write_starts_from_an_empty_file() {
        let dir = tempfile::tempdir().unwrap();
        let job = Job {
            pattern: Pattern::Write,
            ..small_job(Engine::Sync)
        };
        let r = run(&job, Target::Dir(dir.path()), &Arc::default()).unwrap();
        assert_eq!(r.write.unwrap().io_bytes, 1 << 20);
        assert!(r.read.is_none());
    }

    #[test]
    fn a_cancelled_run_stops_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let control = Arc::new(Control::default());
        control.cancel();
        let job = Job {
            time_based: true,
            runtime: Some(Duration::from_secs(60)),
            ..small_job(Engine::LibAio)
        };
        let started = Instant::now();
        assert!(matches!(
            run(&job, Target::Dir(dir.path()), &control),
            Err(EngineError::Cancelled)
        ));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
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
