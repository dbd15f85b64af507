//! The benchmarks people already run, as fio job files for nasd's engine,
//! so their figures can be put beside what forums and storage comparisons
//! quote. dbench's summary is also printed in its familiar format.

use serde::{Deserialize, Serialize};

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

/// PiBenchmarks' storage test ("Storage.sh"), tool by tool: each job
/// names the command it stands in for. About a minute on a USB 3 disk.
const SBC: &str = "\
[global]
randrepeat=1

; hdparm -t --direct: 2 MiB reads from the device for 3 s
[hdparm-t-direct]
rw=read
bs=2m
size=256m
direct=1
ioengine=sync
time_based=1
runtime=3

; hdparm -T: the same 2 MiB read again and again from the cache for 2 s
[hdparm-T-cached]
rw=read
bs=2m
size=2m
direct=0
ioengine=sync
time_based=1
runtime=2

; dd if=/dev/zero of=test bs=4k count=80k conv=fsync
[dd-write-4k-fsync]
rw=write
bs=4k
size=320m
direct=0
ioengine=sync
end_fsync=1

; fio --randrepeat=1 --ioengine=libaio --direct=1 --gtod_reduce=1 --bs=4k
;     --iodepth=64 --size=80M --readwrite=randwrite (and randread)
[fio-randwrite-4k-qd64]
rw=randwrite
bs=4k
iodepth=64
size=80m
direct=1
ioengine=libaio

[fio-randread-4k-qd64]
rw=randread
bs=4k
iodepth=64
size=80m
direct=1
ioengine=libaio

; iozone -a -e -I -i 0 -i 1 -i 2 -s 80M -r 4k
[iozone-write-4k]
rw=write
bs=4k
size=80m
direct=1
ioengine=sync

[iozone-read-4k]
rw=read
bs=4k
size=80m
direct=1
ioengine=sync

[iozone-randread-4k]
rw=randread
bs=4k
size=80m
direct=1
ioengine=sync

[iozone-randwrite-4k]
rw=randwrite
bs=4k
size=80m
direct=1
ioengine=sync
";

pub const NAMES: [&str; 4] = ["kubestr", "dbench", "sbc", "quick"];

/// The job file of a preset.
pub fn jobfile(name: &str) -> Result<&'static str, Invalid> {
    match name {
        "kubestr" => Ok(KUBESTR),
        "dbench" => Ok(DBENCH),
        "sbc" => Ok(SBC),
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

/// The SBC storage score with every input in the unit the original tools
/// print (the original script once read KB/s as MB/s; here each unit is
/// in the field's name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SbcScore {
    /// hdparm's "MB/sec" is MiB per second.
    pub hdparm_direct_read_mib_per_s: f64,
    pub hdparm_cached_read_mib_per_s: f64,
    /// dd's "MB/s" is 10^6 bytes per second.
    pub dd_write_mb_per_s: f64,
    pub fio_randread_iops: f64,
    pub fio_randwrite_iops: f64,
    /// iozone's "kB/sec" is KiB per second.
    pub iozone_write_kib_per_s: f64,
    pub iozone_read_kib_per_s: f64,
    pub iozone_randread_kib_per_s: f64,
    pub iozone_randwrite_kib_per_s: f64,
    pub score: f64,
}

/// The score of an `sbc` run, or None when a job is missing.
pub fn sbc_score(results: &[JobResult]) -> Option<SbcScore> {
    let job = |name: &str| results.iter().find(|r| r.job == name);
    let read = |name: &str| job(name)?.read.as_ref();
    let write = |name: &str| job(name)?.write.as_ref();
    let kib = |bytes_per_s: f64| bytes_per_s / 1024.0;
    let mut s = SbcScore {
        hdparm_direct_read_mib_per_s: read("hdparm-t-direct")?.bw_mib_per_s,
        hdparm_cached_read_mib_per_s: read("hdparm-T-cached")?.bw_mib_per_s,
        dd_write_mb_per_s: write("dd-write-4k-fsync")?.bw_mb_per_s,
        fio_randread_iops: read("fio-randread-4k-qd64")?.iops,
        fio_randwrite_iops: write("fio-randwrite-4k-qd64")?.iops,
        iozone_write_kib_per_s: kib(write("iozone-write-4k")?.bw_bytes_per_s),
        iozone_read_kib_per_s: kib(read("iozone-read-4k")?.bw_bytes_per_s),
        iozone_randread_kib_per_s: kib(read("iozone-randread-4k")?.bw_bytes_per_s),
        iozone_randwrite_kib_per_s: kib(write("iozone-randwrite-4k")?.bw_bytes_per_s),
        score: 0.0,
    };
    s.score = (s.dd_write_mb_per_s * 1024.0
        + s.fio_randread_iops * 4.0
        + s.fio_randwrite_iops * 10.0
        + s.iozone_read_kib_per_s
        + s.iozone_write_kib_per_s
        + s.iozone_randread_kib_per_s * 4.0
        + s.iozone_randwrite_kib_per_s * 10.0)
        / 100.0;
    Some(s)
}

/// The score with each figure and its unit, as the SBC script prints them.
pub fn sbc_summary(s: &SbcScore) -> String {
    format!(
        "hdparm -t --direct: {:.2} MB/sec (MiB/s)   hdparm -T: {:.2} MB/sec (MiB/s)\n\
         dd 4k conv=fsync write: {:.2} MB/s (10^6 B/s)\n\
         fio 4k QD64: random read {:.0} IOPS, random write {:.0} IOPS\n\
         iozone 4k (KiB/s): write {:.0}, read {:.0}, random read {:.0}, random write {:.0}\n\
         Score: {:.0}\n",
        s.hdparm_direct_read_mib_per_s,
        s.hdparm_cached_read_mib_per_s,
        s.dd_write_mb_per_s,
        s.fio_randread_iops,
        s.fio_randwrite_iops,
        s.iozone_write_kib_per_s,
        s.iozone_read_kib_per_s,
        s.iozone_randread_kib_per_s,
        s.iozone_randwrite_kib_per_s,
        s.score
    )
}

/// The summary a preset prints after its figures: dbench's four lines, or
/// the SBC score.
pub fn summary(results: &[JobResult]) -> Option<String> {
    dbench_summary(results).or_else(|| sbc_score(results).map(|s| sbc_summary(&s)))
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
        let err = jobfile("fast").unwrap_err().to_string();
        assert!(
            err.contains("preset") && err.contains("kubestr, dbench, sbc, quick"),
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
            engine: "libaio".into(),
            direct: true,
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

    #[test]
    fn the_sbc_score_follows_the_formula_with_explicit_units() {
        let sbc = job::parse(jobfile("sbc").unwrap()).unwrap();
        assert_eq!(sbc.len(), 9);
        let dd = sbc.iter().find(|j| j.name == "dd-write-4k-fsync").unwrap();
        assert_eq!(
            (dd.size, dd.block_size, dd.end_fsync, dd.direct),
            (80 * 1024 * 4096, 4096, true, false)
        );
        let fio = sbc
            .iter()
            .find(|j| j.name == "fio-randread-4k-qd64")
            .unwrap();
        assert_eq!(
            (fio.iodepth, fio.size, fio.time_based),
            (64, 80 << 20, false)
        );
        // Figures in bytes per second: dd 20 MB/s, iozone 4 MiB/s etc.
        let bw = |bytes_per_s: f64, iops: f64| {
            let mut d = direction(iops, bytes_per_s / 1_048_576.0, 100.0).unwrap();
            d.bw_bytes_per_s = bytes_per_s;
            d.bw_mb_per_s = bytes_per_s / 1e6;
            Some(d)
        };
        let results = [
            result("hdparm-t-direct", bw(100.0 * 1_048_576.0, 50.0), None),
            result("hdparm-T-cached", bw(2000.0 * 1_048_576.0, 1000.0), None),
            result("dd-write-4k-fsync", None, bw(20e6, 4883.0)),
            result("fio-randread-4k-qd64", bw(0.0, 3000.0), None),
            result("fio-randwrite-4k-qd64", None, bw(0.0, 1500.0)),
            result("iozone-write-4k", None, bw(4096.0 * 1024.0, 0.0)),
            result("iozone-read-4k", bw(8192.0 * 1024.0, 0.0), None),
            result("iozone-randread-4k", bw(2048.0 * 1024.0, 0.0), None),
            result("iozone-randwrite-4k", None, bw(1024.0 * 1024.0, 0.0)),
        ];
        let s = sbc_score(&results).unwrap();
        assert_eq!(s.iozone_write_kib_per_s, 4096.0);
        assert_eq!(s.dd_write_mb_per_s, 20.0);
        // (20*1024 + 3000*4 + 1500*10 + 8192 + 4096 + 2048*4 + 1024*10) / 100
        let expected = (20480.0 + 12000.0 + 15000.0 + 8192.0 + 4096.0 + 8192.0 + 10240.0) / 100.0;
        assert!((s.score - expected).abs() < 1e-9, "{}", s.score);
        let text = summary(&results).unwrap();
        assert!(
            text.contains("Score: 782") && text.contains("MB/s (10^6 B/s)"),
            "{text}"
        );
        assert_eq!(sbc_score(&results[1..]), None);
    }
}
