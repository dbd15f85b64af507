//! fio job files: the INI subset people paste into forums. A key nasd does
//! not know is an error naming it, so a job never silently runs as
//! something else than what was asked.

use std::time::Duration;

use crate::validate::Invalid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// Random, reads with probability `rwmixread` %.
    RandRw,
}

impl Pattern {
    pub fn random(self) -> bool {
        matches!(
            self,
            Pattern::RandRead | Pattern::RandWrite | Pattern::RandRw
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// Linux native AIO (fio's libaio), through raw syscalls.
    LibAio,
    /// io_uring where the kernel has it (5.6+), else native AIO.
    IoUring,
    /// One request at a time with pread/pwrite (fio's sync and psync).
    Sync,
}

/// The most memory a job's I/O buffers may take: every request in flight
/// has its own.
const MAX_BUFFER_BYTES: u64 = 256 << 20;

/// One job, with fio's defaults for what the file leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub name: String,
    pub pattern: Pattern,
    pub block_size: u64,
    pub iodepth: u32,
    /// Bytes of the test file (u64: 2 TB fits on armv7 too).
    pub size: u64,
    pub numjobs: u32,
    pub runtime: Option<Duration>,
    pub time_based: bool,
    pub ramp: Duration,
    pub direct: bool,
    pub engine: Engine,
    pub rwmixread: u32,
    /// The test file's name inside the target (else the job's name).
    pub filename: Option<String>,
    pub randrepeat: bool,
    /// fsync the file when the job's I/O is done, inside the measured
    /// time (dd's conv=fsync).
    pub end_fsync: bool,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            name: "job".into(),
            pattern: Pattern::Read,
            block_size: 4096,
            iodepth: 1,
            size: 0,
            numjobs: 1,
            runtime: None,
            time_based: false,
            ramp: Duration::ZERO,
            direct: false,
            engine: Engine::Sync,
            rwmixread: 50,
            filename: None,
            randrepeat: true,
            end_fsync: false,
        }
    }
}

/// `4k`, `64K`, `1M`, `2g`, `512`: fio's sizes are powers of 1024.
pub fn size(key: &str, text: &str) -> Result<u64, Invalid> {
    let text = text.trim();
    let lower = text.to_ascii_lowercase();
    let trimmed = lower.trim_end_matches('b').trim_end_matches('i');
    let (digits, unit) = match trimmed.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => trimmed.split_at(i),
        None => (trimmed, ""),
    };
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => {
            return Err(Invalid::new(
                key,
                format!("'{text}' is not a size such as 4k, 64K, 1M or 2G"),
            ));
        }
    };
    let n: u64 = digits.parse().map_err(|_| {
        Invalid::new(
            key,
            format!("'{text}' is not a size such as 4k, 64K, 1M or 2G"),
        )
    })?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| Invalid::new(key, format!("'{text}' is too large")))
}

/// `120`, `120s`, `2m`, `500ms`: seconds unless a unit says otherwise.
fn duration(key: &str, text: &str) -> Result<Duration, Invalid> {
    let t = text.trim().to_ascii_lowercase();
    let bad = || {
        Invalid::new(
            key,
            format!("'{text}' is not a time such as 120, 120s, 2m or 500ms"),
        )
    };
    let (number, factor_ms) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3_600_000)
    } else {
        (t.as_str(), 1000)
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    Ok(Duration::from_millis(
        n.checked_mul(factor_ms).ok_or_else(bad)?,
    ))
}

fn number(key: &str, text: &str, range: std::ops::RangeInclusive<u32>) -> Result<u32, Invalid> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            Invalid::new(
                key,
                format!("must be {} to {}, got '{text}'", range.start(), range.end()),
            )
        })
}

fn flag(key: &str, text: &str) -> Result<bool, Invalid> {
    match text.trim() {
        "1" | "true" | "" => Ok(true),
        "0" | "false" => Ok(false),
        other => Err(Invalid::new(key, format!("must be 0 or 1, got '{other}'"))),
    }
}

/// Applies one `key=value` (or bare `key`) to a job.
fn set(job: &mut Job, key: &str, value: &str) -> Result<(), Invalid> {
    match key {
        "name" => job.name = value.trim().to_owned(),
        "rw" | "readwrite" => {
            job.pattern = match value.trim() {
                "read" => Pattern::Read,
                "write" => Pattern::Write,
                "randread" => Pattern::RandRead,
                "randwrite" => Pattern::RandWrite,
                "randrw" => Pattern::RandRw,
                other => {
                    return Err(Invalid::new(
                        key,
                        format!("'{other}' is not one of read, write, randread, randwrite, randrw"),
                    ));
                }
            }
        }
        "bs" | "blocksize" => job.block_size = size(key, value)?,
        "iodepth" => job.iodepth = number(key, value, 1..=256)?,
        "size" => job.size = size(key, value)?,
        "numjobs" => job.numjobs = number(key, value, 1..=16)?,
        "runtime" => job.runtime = Some(duration(key, value)?),
        "time_based" => job.time_based = flag(key, value)?,
        "ramp_time" => job.ramp = duration(key, value)?,
        "direct" => job.direct = flag(key, value)?,
        "ioengine" => {
            job.engine = match value.trim() {
                "libaio" => Engine::LibAio,
                "io_uring" => Engine::IoUring,
                "sync" | "psync" | "pvsync" => Engine::Sync,
                other => {
                    return Err(Invalid::new(
                        key,
                        format!("'{other}' is not one of libaio, io_uring, sync, psync"),
                    ));
                }
            }
        }
        "rwmixread" => job.rwmixread = number(key, value, 0..=100)?,
        "filename" => {
            let name = value.trim();
            if name.is_empty() || name.contains('/') {
                return Err(Invalid::new(
                    key,
                    "must be a file name inside the target, without '/' (a device is given as the target)",
                ));
            }
            job.filename = Some(name.to_owned());
        }
        "directory" => {
            return Err(Invalid::new(
                key,
                "the directory is the run's target (--target, or the API's target): remove this line",
            ));
        }
        "randrepeat" => job.randrepeat = flag(key, value)?,
        "end_fsync" => job.end_fsync = flag(key, value)?,
        // Output and timing options that change no I/O: accepted.
        "group_reporting" | "gtod_reduce" => {
            flag(key, value)?;
        }
        other => return Err(Invalid::new(other, "is not a fio option nasd knows")),
    }
    Ok(())
}

/// A job file: `[global]` options apply to every job section after it.
pub fn parse(text: &str) -> Result<Vec<Job>, Invalid> {
    let mut global = Job::default();
    let mut jobs: Vec<Job> = Vec::new();
    let mut in_global = false;
    for raw in text.lines() {
        let line = raw.split(['#', ';']).next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_global = section == "global";
            if !in_global {
                jobs.push(Job {
                    name: section.to_owned(),
                    ..global.clone()
                });
            }
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .map_or((line, ""), |(k, v)| (k.trim(), v));
        let target = if in_global {
            &mut global
        } else {
            jobs.last_mut()
                .ok_or_else(|| Invalid::new(key, "comes before any [job] section"))?
        };
        set(target, key, value)?;
    }
    if jobs.is_empty() {
        return Err(Invalid::new("jobfile", "has no [job] section"));
    }
    for job in &jobs {
        if job.size == 0 {
            return Err(Invalid::new(
                "size",
                format!("job '{}' needs a size", job.name),
            ));
        }
        if job.block_size == 0 || job.block_size > job.size {
            return Err(Invalid::new(
                "bs",
                format!(
                    "job '{}': the block size must be between 1 and the size",
                    job.name
                ),
            ));
        }
        let buffers = job
            .block_size
            .saturating_mul(u64::from(job.iodepth))
            .saturating_mul(u64::from(job.numjobs));
        if buffers > MAX_BUFFER_BYTES {
            return Err(Invalid::new(
                "bs",
                format!(
                    "job '{}': bs x iodepth x numjobs is {buffers} bytes of buffers; at most {MAX_BUFFER_BYTES} (256 MiB) fit beside the rest on a 2 GB board",
                    job.name
                ),
            ));
        }
        if job.time_based && job.runtime.is_none() {
            return Err(Invalid::new(
                "runtime",
                format!("job '{}' is time_based but has no runtime", job.name),
            ));
        }
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kubestr's fio profiles: shared options, then rw, bs and iodepth.
    fn kubestr(name: &str, rw: &str, bs: &str, iodepth: &str) -> String {
        format!(
            "[global]\nioengine=libaio\ndirect=1\nsize=2G\nnumjobs=4\ntime_based\nruntime=120\ngroup_reporting\n\n[{name}]\nrw={rw}\nbs={bs}\niodepth={iodepth}\n"
        )
    }

    #[test]
    fn the_four_kubestr_profiles_parse() {
        for (name, rw, bs, depth, pattern, block) in [
            (
                "rand_readwrite_iops",
                "randrw",
                "4K",
                "256",
                Pattern::RandRw,
                4096,
            ),
            (
                "rand_readwrite_bw",
                "randrw",
                "64K",
                "64",
                Pattern::RandRw,
                65_536,
            ),
            ("seq_read_iops", "read", "4K", "256", Pattern::Read, 4096),
            ("seq_read_bw", "read", "64K", "64", Pattern::Read, 65_536),
        ] {
            let jobs = parse(&kubestr(name, rw, bs, depth)).unwrap();
            let j = &jobs[0];
            assert_eq!(j.name, name);
            assert_eq!(
                (j.pattern, j.block_size, j.iodepth.to_string()),
                (pattern, block, depth.to_owned())
            );
            assert_eq!(
                (j.size, j.numjobs, j.engine, j.direct),
                (2 << 30, 4, Engine::LibAio, true)
            );
            assert!(j.time_based);
            assert_eq!(j.runtime, Some(Duration::from_secs(120)));
        }
        // An option nasd does not implement (verify) is named, not ignored.
        assert_eq!(parse("[global]\nverify=0\n").unwrap_err().field, "verify");
    }

    #[test]
    fn the_seed_commands_job_forms_parse() {
        // PiBenchmarks' fio line, as a job file.
        let pi = "[pi]\nrandrepeat=1\nioengine=libaio\ndirect=1\ngtod_reduce=1\nbs=4k\niodepth=64\nsize=80M\nreadwrite=randwrite\n";
        let j = &parse(pi).unwrap()[0];
        assert_eq!(
            (j.pattern, j.iodepth, j.size),
            (Pattern::RandWrite, 64, 80 << 20)
        );
        // The random-read variant.
        let rr = "[global]\nrw=randread\nbs=4K\ndirect=1\nnumjobs=16\niodepth=64\nsize=1G\nioengine=libaio\nruntime=120\ntime_based\ngroup_reporting\n[r]\n";
        let j = &parse(rr).unwrap()[0];
        assert_eq!((j.numjobs, j.iodepth, j.size), (16, 64, 1 << 30));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        assert_eq!(
            parse("[a]\nsize=1M\nfsync_on_close=1\n").unwrap_err().field,
            "fsync_on_close"
        );
        assert_eq!(
            parse("[a]\nsize=1M\niodepth=0\n").unwrap_err().field,
            "iodepth"
        );
        assert_eq!(
            parse("[a]\nsize=1M\nrw=scramble\n").unwrap_err().field,
            "rw"
        );
        assert_eq!(parse("[a]\nsize=lots\n").unwrap_err().field, "size");
        assert_eq!(parse("[a]\nrw=read\n").unwrap_err().field, "size");
        assert_eq!(
            parse("[a]\nsize=1M\ntime_based\n").unwrap_err().field,
            "runtime"
        );
        assert_eq!(parse("size=1M\n").unwrap_err().field, "size");
        assert_eq!(
            parse("[a]\nsize=1M\ndirectory=/mnt\n").unwrap_err().field,
            "directory"
        );
        assert_eq!(
            parse("[a]\nsize=1M\nfilename=../x\n").unwrap_err().field,
            "filename"
        );
        // 256 requests of 64 MiB each would not fit in a board's memory.
        let err = parse("[a]\nsize=1G\nbs=64M\niodepth=256\n").unwrap_err();
        assert_eq!(err.field, "bs");
        assert!(err.to_string().contains("256 MiB"), "{err}");
        assert_eq!(parse("").unwrap_err().field, "jobfile");
    }

    #[test]
    fn sizes_are_u64_even_where_usize_is_32_bits() {
        // A 2 TB file on armv7: more than a 32-bit usize holds.
        assert_eq!(size("size", "2T").unwrap(), 2u64 << 40);
        assert_eq!(size("size", "2048G").unwrap(), 2u64 << 40);
        assert_eq!(size("bs", "64KiB").unwrap(), 65_536);
        assert_eq!(size("bs", "512").unwrap(), 512);
        assert!(size("size", "99999999999T").is_err());
        assert_eq!(duration("runtime", "2m").unwrap(), Duration::from_secs(120));
        assert_eq!(
            duration("ramp_time", "500ms").unwrap(),
            Duration::from_millis(500)
        );
    }
}
