//! The benchmarks people already run, as fio job files for nasd's engine,
//! so their figures can be put beside what forums and storage comparisons
//! quote. dbench's summary is also printed in its familiar format.

use super::engine::JobResult;
use crate::validate::Invalid;

/// kubestr's four profiles: 2 GiB per job, four jobs, two minutes each.
const KUBESTR: &str = "\
[global]
ioengine=libaio
direct=1
size=2g
numjobs=4
time_based=1
runtime=120
group_reporting=1

[randrw-iops]
rw=randrw
bs=4k
iodepth=256

[randrw-throughput]
rw=randrw
bs=64k
iodepth=64

[read-iops]
rw=read
bs=4k
iodepth=256

[read-throughput]
rw=read
bs=64k
iodepth=64
";

/// dbench's tests: 2 GiB, 15 s each after a 2 s ramp; the sequential ones
/// run four jobs of 500 MiB as dbench does.
const DBENCH: &str = "\
[global]
ioengine=libaio
direct=1
size=2g
time_based=1
runtime=15
ramp_time=2
randrepeat=0
gtod_reduce=1

[read-iops]
rw=randread
bs=4k
iodepth=64

[write-iops]
rw=randwrite
bs=4k
iodepth=64

[read-bw]
rw=randread
bs=128k
iodepth=64

[write-bw]
rw=randwrite
bs=128k
iodepth=64

[read-latency]
rw=randread
bs=4k
iodepth=4

[write-latency]
rw=randwrite
bs=4k
iodepth=4

[read-seq]
rw=read
bs=1m
iodepth=16
numjobs=4
size=500m

[write-seq]
rw=write
bs=1m
iodepth=16
numjobs=4
size=500m

[rw-mix]
rw=randrw
rwmixread=75
bs=4k
iodepth=64
";

/// About 30 s in all, for schedules: small random and large sequential
/// reads and writes on a 256 MiB file.
const QUICK: &str = "\
[global]
ioengine=libaio
direct=1
size=256m
time_based=1
runtime=6
ramp_time=1

[randread-4k-qd32]
rw=randread
bs=4k
iodepth=32

[randwrite-4k-qd32]
rw=randwrite
bs=4k
iodepth=32

[read-1m-qd8]
rw=read
bs=1m
iodepth=8

[write-1m-qd8]
rw=write
bs=1m
iodepth=8
";

pub const NAMES: [&str; 3] = ["kubestr", "dbench", "quick"];

/// The job file of a preset.
pub fn jobfile(name: &str) -> Result<&'static str, Invalid> {
    match name {
        "kubestr" => Ok(KUBESTR),
        "dbench" => Ok(DBENCH),
        "quick" => Ok(QUICK),
        _ => Err(Invalid::new(
            "preset",
            format!("must be one of {}", NAMES.join(", ")),
        )),
    }
}

/// dbench's four-line summary of a `dbench` run, or None when a job is
/// missing (a run of some other job file).
pub fn dbench_summary(results: &[JobResult]) -> Option<String> {
    let job = |name: &str| results.iter().find(|r| r.job == name);
    let read = |name: &str| job(name)?.read.as_ref();
    let write = |name: &str| job(name)?.write.as_ref();
    let mib = |bw: f64| format!("{:.0}MiB/s", bw / 1_048_576.0);
    Some(format!(
        "Random Read/Write IOPS: {}/{}. BW: {} / {}\n\
         Average Latency (usec) Read/Write: {:.2}/{:.2}\n\
         Sequential Read/Write: {} / {}\n\
         Mixed Random Read/Write IOPS: {}/{}\n",
        kilo(read("read-iops")?.iops),
        kilo(write("write-iops")?.iops),
        mib(read("read-bw")?.bw_bytes_per_s),
        mib(write("write-bw")?.bw_bytes_per_s),
        read("read-latency")?.lat_us.mean,
        write("write-latency")?.lat_us.mean,
        mib(read("read-seq")?.bw_bytes_per_s),
        mib(write("write-seq")?.bw_bytes_per_s),
        kilo(read("rw-mix")?.iops),
        kilo(write("rw-mix")?.iops),
    ))
}

/// dbench's IOPS notation: 174k, 77.8k, 950.
fn kilo(iops: f64) -> String {
    if iops >= 100_000.0 {
        format!("{:.0}k", iops / 1000.0)
    } else if iops >= 1000.0 {
        format!("{:.1}k", iops / 1000.0)
    } else {
        format!("{iops:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::disk::engine::{Direction, Latency};
    use crate::bench::disk::job::{self, Pattern};

    #[test]
    fn every_preset_parses_into_the_jobs_it_names() {
        let kubestr = job::parse(jobfile("kubestr").unwrap()).unwrap();
        let shapes: Vec<_> = kubestr
            .iter()
            .map(|j| (j.pattern, j.block_size, j.iodepth, j.numjobs, j.size))
            .collect();
        let gib2 = 2 * 1024 * 1024 * 1024;
        assert_eq!(
            shapes,
            [
                (Pattern::RandRw, 4096, 256, 4, gib2),
                (Pattern::RandRw, 65536, 64, 4, gib2),
                (Pattern::Read, 4096, 256, 4, gib2),
                (Pattern::Read, 65536, 64, 4, gib2),
            ]
        );
        let dbench = job::parse(jobfile("dbench").unwrap()).unwrap();
        assert_eq!(dbench.len(), 9);
        let seq = dbench.iter().find(|j| j.name == "write-seq").unwrap();
        assert_eq!((seq.numjobs, seq.size), (4, 500 * 1024 * 1024));
        let quick = job::parse(jobfile("quick").unwrap()).unwrap();
        let seconds: u64 = quick
            .iter()
            .map(|j| (j.ramp + j.runtime.unwrap()).as_secs())
            .sum();
        assert!((20..=35).contains(&seconds), "quick takes {seconds} s");
    }

    #[test]
    fn an_unknown_preset_names_the_choices() {
        let err = jobfile("sbc").unwrap_err().to_string();
        assert!(
            err.contains("preset") && err.contains("kubestr, dbench, quick"),
            "{err}"
        );
    }

    fn direction(iops: f64, mib_per_s: f64, mean_us: f64) -> Option<Direction> {
        Some(Direction {
            io_bytes: 0,
            ios: 0,
            iops,
            bw_bytes_per_s: mib_per_s * 1_048_576.0,
            bw_mib_per_s: mib_per_s,
            bw_mb_per_s: mib_per_s * 1.048_576,
            lat_us: Latency {
                mean: mean_us,
                p50: mean_us,
                p90: mean_us,
                p99: mean_us,
                p99_9: mean_us,
            },
        })
    }

    fn result(job: &str, read: Option<Direction>, write: Option<Direction>) -> JobResult {
        JobResult {
            job: job.into(),
            engine: "libaio",
            seconds: 15.0,
            read,
            write,
        }
    }

    #[test]
    fn the_dbench_summary_reads_like_dbench() {
        let results = [
            result("read-iops", direction(174_321.0, 681.0, 367.0), None),
            result("write-iops", None, direction(103_000.0, 402.0, 621.0)),
            result("read-bw", direction(14_648.0, 1831.0, 0.0), None),
            result("write-bw", None, direction(19_736.0, 2467.0, 0.0)),
            result("read-latency", direction(0.0, 0.0, 66.861), None),
            result("write-latency", None, direction(0.0, 0.0, 43.634)),
            result("read-seq", direction(0.0, 3193.2, 0.0), None),
            result("write-seq", None, direction(0.0, 2835.0, 0.0)),
            result(
                "rw-mix",
                direction(77_812.0, 0.0, 0.0),
                direction(950.0, 0.0, 0.0),
            ),
        ];
        assert_eq!(
            dbench_summary(&results).unwrap(),
            "Random Read/Write IOPS: 174k/103k. BW: 1831MiB/s / 2467MiB/s\n\
             Average Latency (usec) Read/Write: 66.86/43.63\n\
             Sequential Read/Write: 3193MiB/s / 2835MiB/s\n\
             Mixed Random Read/Write IOPS: 77.8k/950\n"
        );
        assert_eq!(dbench_summary(&results[1..]), None);
    }
}
