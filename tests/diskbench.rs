//! The disk benchmark engine on a loop-mounted ext4 (root: loop devices,
//! mount), through the command line.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

struct Mounted {
    dir: tempfile::TempDir,
    dev: String,
}

impl Mounted {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("disk.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(512 << 20)
            .unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image)
            .output()
            .unwrap();
        let dev = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        assert!(
            Command::new("mkfs.ext4")
                .args(["-q", &dev])
                .status()
                .unwrap()
                .success()
        );
        std::fs::create_dir(dir.path().join("mnt")).unwrap();
        assert!(
            Command::new("mount")
                .arg(&dev)
                .arg(dir.path().join("mnt"))
                .status()
                .unwrap()
                .success()
        );
        Mounted { dir, dev }
    }

    fn mnt(&self) -> std::path::PathBuf {
        self.dir.path().join("mnt")
    }

    fn bench(&self, jobfile: &str, target: &Path) -> Output {
        let file = self.dir.path().join("job.fio");
        std::fs::write(&file, jobfile).unwrap();
        bench_disk(&[
            "--fio".as_ref(),
            file.as_ref(),
            "--target".as_ref(),
            target.as_ref(),
        ])
    }
}

fn bench_disk(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nasd"))
        .args(["--config", "/dev/null", "bench", "disk", "--json"])
        .args(args)
        .output()
        .unwrap()
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mnt()).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

#[test]
fn every_pattern_gives_non_zero_consistent_figures_with_both_engines() {
    let m = Mounted::new();
    for engine in ["libaio", "sync"] {
        let jobfile = format!(
            "[global]\nioengine={engine}\ndirect=1\nsize=32M\ntime_based\nruntime=1\niodepth=8\n\
             [read]\nrw=read\nbs=64k\n[write]\nrw=write\nbs=64k\n[randread]\nrw=randread\nbs=4k\n\
             [randwrite]\nrw=randwrite\nbs=4k\n[randrw]\nrw=randrw\nbs=4k\nrwmixread=75\n"
        );
        let out = m.bench(&jobfile, &m.mnt());
        assert!(
            out.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(results.len(), 5);
        assert!(
            results.iter().all(|r| r["engine"] == engine),
            "{engine} ran as asked"
        );
        for r in &results {
            let name = r["job"].as_str().unwrap();
            let bs = if name == "read" || name == "write" {
                65_536.0
            } else {
                4096.0
            };
            for dir in ["read", "write"] {
                let d = &r[dir];
                let expected = match name {
                    "randrw" => true,
                    other => other.contains(dir),
                };
                assert_eq!(!d.is_null(), expected, "{engine} {name} {dir}: {r}");
                if d.is_null() {
                    continue;
                }
                let iops = d["iops"].as_f64().unwrap();
                let bw = d["bw_bytes_per_s"].as_f64().unwrap();
                assert!(iops > 10.0, "{engine} {name} {dir}: {iops}");
                assert!(
                    (bw - iops * bs).abs() / bw < 1e-6,
                    "bandwidth is IOPS times the block size"
                );
                let (p50, p99) = (
                    d["lat_us"]["p50"].as_f64().unwrap(),
                    d["lat_us"]["p99"].as_f64().unwrap(),
                );
                assert!(
                    p50 > 0.0 && p99 >= p50,
                    "{engine} {name} {dir}: {p50} {p99}"
                );
            }
        }
        let reads = results[4]["read"]["ios"].as_f64().unwrap();
        let writes = results[4]["write"]["ios"].as_f64().unwrap();
        let share = reads / (reads + writes);
        assert!((0.7..0.8).contains(&share), "rwmixread=75 gave {share}");
    }
    let left: Vec<_> = std::fs::read_dir(m.mnt())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["lost+found"], "the test files are removed");
}

#[test]
fn a_size_bound_job_moves_exactly_its_size() {
    let m = Mounted::new();
    let out = m.bench(
        "[w]\nrw=write\nbs=128k\nsize=16M\nioengine=libaio\ndirect=1\niodepth=4\n",
        &m.mnt(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(results[0]["write"]["io_bytes"], 16u64 << 20);
}

#[test]
fn bad_jobs_and_targets_are_refused_by_name() {
    let m = Mounted::new();
    let unknown = m.bench("[a]\nsize=1M\nverify=md5\n", &m.mnt());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("verify: is not a fio option nasd knows")
    );
    let raw = m.bench("[a]\nsize=1M\n", Path::new(&m.dev));
    assert!(!raw.status.success());
    assert!(String::from_utf8_lossy(&raw.stderr).contains("target: must be a directory"));
    let huge = m.bench("[a]\nsize=10G\n", &m.mnt());
    assert!(
        String::from_utf8_lossy(&huge.stderr).contains("size: the test files need"),
        "{huge:?}"
    );
}

#[test]
fn the_quick_preset_runs_its_four_tests() {
    let m = Mounted::new();
    let out = bench_disk(&[
        "--preset".as_ref(),
        "quick".as_ref(),
        "--target".as_ref(),
        m.mnt().as_ref(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let jobs: Vec<_> = results.iter().map(|r| r["job"].as_str().unwrap()).collect();
    assert_eq!(
        jobs,
        [
            "randread-4k-qd32",
            "randwrite-4k-qd32",
            "read-1m-qd8",
            "write-1m-qd8"
        ]
    );
    for r in &results {
        let dir = if r["job"].as_str().unwrap().contains("write") {
            "write"
        } else {
            "read"
        };
        assert!(r[dir]["iops"].as_f64().unwrap() > 10.0, "{r}");
        assert!(
            r["seconds"].as_f64().unwrap() >= 5.9,
            "six measured seconds after the ramp: {r}"
        );
    }

    let unknown = bench_disk(&[
        "--preset".as_ref(),
        "sbc".as_ref(),
        "--target".as_ref(),
        m.mnt().as_ref(),
    ]);
    assert!(
        String::from_utf8_lossy(&unknown.stderr)
            .contains("preset: must be one of kubestr, dbench, quick"),
        "{unknown:?}"
    );
}

#[test]
fn a_killed_run_holds_no_lock_and_its_files_go_at_the_next_run() {
    let m = Mounted::new();
    std::fs::write(m.mnt().join("keep.txt"), "the user's").unwrap();
    let job = m.dir.path().join("long.fio");
    std::fs::write(
        &job,
        "[long]\nrw=randread\nbs=4k\nsize=8M\nioengine=libaio\ndirect=1\ntime_based\nruntime=120\n",
    )
    .unwrap();
    let mut running = Command::new(env!("CARGO_BIN_EXE_nasd"))
        .args(["--config", "/dev/null", "bench", "disk", "--fio"])
        .arg(&job)
        .arg("--target")
        .arg(m.mnt())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let test_file = m.mnt().join("nasd-bench.long.0");
    for _ in 0..100 {
        if test_file.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(test_file.exists(), "the run lays out its file");

    let second = m.bench("[a]\nsize=1M\n", &m.mnt());
    assert!(!second.status.success());
    assert!(
        String::from_utf8_lossy(&second.stderr)
            .contains("target: a disk benchmark is already running there"),
        "{second:?}"
    );

    running.kill().unwrap();
    running.wait().unwrap();
    assert!(test_file.exists(), "SIGKILL leaves the file behind");

    let next = m.bench("[a]\nsize=1M\nrw=write\n", &m.mnt());
    assert!(
        next.status.success(),
        "the lock died with the process: {}",
        String::from_utf8_lossy(&next.stderr)
    );
    let mut left: Vec<_> = std::fs::read_dir(m.mnt())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["keep.txt", "lost+found"]);
}

#[test]
fn fio_shaped_output_reads_like_fios() {
    let m = Mounted::new();
    let job = m.dir.path().join("w.fio");
    std::fs::write(
        &job,
        "[w]\nrw=write\nbs=128k\nsize=16M\nioengine=libaio\ndirect=1\niodepth=4\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nasd"))
        .args([
            "--config",
            "/dev/null",
            "bench",
            "disk",
            "--fio-json",
            "--fio",
        ])
        .arg(&job)
        .arg("--target")
        .arg(m.mnt())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let write = &doc["jobs"][0]["write"];
    assert_eq!(doc["jobs"][0]["jobname"], "w");
    assert_eq!(write["io_bytes"], 16u64 << 20);
    assert_eq!(write["io_kbytes"], 16u64 << 10);
    assert_eq!(write["total_ios"], 128);
    let bw = write["bw_bytes"].as_f64().unwrap();
    assert!(
        (write["bw"].as_f64().unwrap() - bw / 1024.0).abs() <= 1.0,
        "bw is KiB/s"
    );
    let p50 = write["lat_ns"]["percentile"]["50.000000"].as_u64().unwrap();
    assert!(p50 > 1000, "nanoseconds: {p50}");
    assert_eq!(doc["jobs"][0]["read"]["io_bytes"], 0);
}
