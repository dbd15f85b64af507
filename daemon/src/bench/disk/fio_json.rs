//! Results in the shape of `fio --output-format=json`, for the fields nasd
//! measures, so scripts written against fio's output read nasd's too.
//! Fields fio has and nasd does not measure (min/max, stddev, slat, clat)
//! are left out rather than filled with made-up values.

use serde_json::{Value, json};

use super::engine::{Direction, JobResult};

/// The document for `results`, `version` naming what produced it.
pub fn render(results: &[JobResult], version: &str) -> Value {
    json!({
        "fio version": format!("nasd-{version}"),
        "jobs": results.iter().map(job).collect::<Vec<_>>(),
    })
}

fn job(result: &JobResult) -> Value {
    json!({
        "jobname": result.job,
        "groupid": 0,
        "error": 0,
        "job_runtime": (result.seconds * 1000.0).round() as u64,
        "read": direction(result.read.as_ref(), result.seconds),
        "write": direction(result.write.as_ref(), result.seconds),
    })
}

/// fio reports a direction that did nothing as zeros; so does this.
fn direction(d: Option<&Direction>, seconds: f64) -> Value {
    let Some(d) = d else {
        return json!({
            "io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0,
            "runtime": 0, "total_ios": 0,
            "lat_ns": { "N": 0, "mean": 0.0 },
        });
    };
    let ns = |us: f64| (us * 1000.0).round() as u64;
    json!({
        "io_bytes": d.io_bytes,
        "io_kbytes": d.io_bytes / 1024,
        "bw_bytes": d.bw_bytes_per_s.round() as u64,
        // fio's `bw` is KiB/s.
        "bw": (d.bw_bytes_per_s / 1024.0).round() as u64,
        "iops": d.iops,
        "runtime": (seconds * 1000.0).round() as u64,
        "total_ios": d.ios,
        "lat_ns": {
            "N": d.ios,
            "mean": d.lat_us.mean * 1000.0,
            "percentile": {
                "50.000000": ns(d.lat_us.p50),
                "90.000000": ns(d.lat_us.p90),
                "99.000000": ns(d.lat_us.p99),
                "99.900000": ns(d.lat_us.p99_9),
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::disk::engine::Latency;

    #[test]
    fn figures_land_where_fio_puts_them_in_fios_units() {
        let read = Direction {
            io_bytes: 1_048_576_000,
            ios: 256_000,
            iops: 25_600.0,
            bw_bytes_per_s: 104_857_600.0,
            bw_mib_per_s: 100.0,
            bw_mb_per_s: 104.857_6,
            lat_us: Latency {
                mean: 1249.5,
                p50: 1200.0,
                p90: 1500.25,
                p99: 2000.0,
                p99_9: 4000.0,
            },
        };
        let result = JobResult {
            job: "randread-4k".into(),
            engine: "libaio".into(),
            direct: true,
            seconds: 10.0,
            read: Some(read),
            write: None,
        };
        let doc = render(&[result], "0.1.0");
        assert_eq!(doc["fio version"], "nasd-0.1.0");
        let job = &doc["jobs"][0];
        assert_eq!(job["jobname"], "randread-4k");
        assert_eq!(job["read"]["bw"], 102_400, "KiB/s");
        assert_eq!(job["read"]["bw_bytes"], 104_857_600);
        assert_eq!(job["read"]["io_kbytes"], 1_024_000);
        assert_eq!(job["read"]["runtime"], 10_000, "milliseconds");
        assert_eq!(job["read"]["lat_ns"]["mean"], 1_249_500.0);
        assert_eq!(job["read"]["lat_ns"]["percentile"]["50.000000"], 1_200_000);
        assert_eq!(job["read"]["lat_ns"]["percentile"]["90.000000"], 1_500_250);
        assert_eq!(job["read"]["lat_ns"]["percentile"]["99.900000"], 4_000_000);
        assert_eq!(job["write"]["io_bytes"], 0);
        assert_eq!(job["write"]["iops"], 0.0);
    }
}
