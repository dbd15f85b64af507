//! Disk benchmarks on loop devices (root: losetup, mkfs, mount) through the
//! command line and the API: every pattern with every engine, presets, raw
//! devices and their refusals, history with baselines and regression
//! events, progress, cancellation, cleanup after a kill, thermal abort.
//! Only the thermal test uses a board fixture tree (a copy of the HC4's,
//! whose temperature the test raises); everything else is the real host.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Daemon, fixture};
use serde_json::{Value, json};

/// A loop device over a sparse file in a temporary directory.
struct Loop {
    dir: tempfile::TempDir,
    dev: String,
}

impl Loop {
    fn new(size: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("disk.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(size)
            .unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image)
            .output()
            .unwrap();
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(dev.starts_with("/dev/loop"), "{out:?}");
        Loop { dir, dev }
    }

    fn image(&self) -> PathBuf {
        self.dir.path().join("disk.img")
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// An ext4 on a loop device, mounted, with a config whose data directory
/// is beside it.
struct Mounted {
    disk: Loop,
}

impl Mounted {
    fn new() -> Self {
        let disk = Loop::new(512 << 20);
        assert!(
            Command::new("mkfs.ext4")
                .args(["-q", &disk.dev])
                .status()
                .unwrap()
                .success()
        );
        std::fs::create_dir(disk.dir.path().join("mnt")).unwrap();
        assert!(
            Command::new("mount")
                .arg(&disk.dev)
                .arg(disk.dir.path().join("mnt"))
                .status()
                .unwrap()
                .success()
        );
        let m = Mounted { disk };
        m.set_regression_percent(20);
        m
    }

    fn dir(&self) -> &Path {
        self.disk.dir.path()
    }

    fn mnt(&self) -> PathBuf {
        self.dir().join("mnt")
    }

    fn config(&self) -> PathBuf {
        self.dir().join("nasd.toml")
    }

    fn state(&self) -> PathBuf {
        self.dir().join("state")
    }

    fn set_regression_percent(&self, percent: u32) {
        std::fs::write(
            self.config(),
            format!(
                "data_dir = \"{}\"\nbench_regression_percent = {percent}\n",
                self.state().display()
            ),
        )
        .unwrap();
    }

    fn nasd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_nasd"));
        c.arg("--config").arg(self.config());
        c
    }

    fn jobfile(&self, name: &str, text: &str) -> PathBuf {
        let file = self.dir().join(name);
        std::fs::write(&file, text).unwrap();
        file
    }

    /// `nasd bench disk --json --fio JOBFILE --target TARGET`.
    fn bench(&self, jobfile: &str, target: &Path) -> Output {
        let file = self.jobfile("job.fio", jobfile);
        self.bench_disk(&[
            "--fio".as_ref(),
            file.as_ref(),
            "--target".as_ref(),
            target.as_ref(),
        ])
    }

    fn bench_disk(&self, args: &[&std::ffi::OsStr]) -> Output {
        self.nasd()
            .args(["bench", "disk", "--json"])
            .args(args)
            .output()
            .unwrap()
    }

    fn cli_json(&self, args: &[&str]) -> Value {
        let out = self.nasd().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn entries(&self) -> Vec<String> {
        let mut left: Vec<_> = std::fs::read_dir(self.mnt())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        left.sort();
        left
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mnt()).status();
    }
}

fn ok_run(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn wait_for(what: &str, secs: u64, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

const LONG_JOB: &str =
    "[long]\nrw=randread\nbs=4k\nsize=8M\nioengine=libaio\ndirect=1\ntime_based\nruntime=120\n";

#[test]
fn every_pattern_gives_non_zero_consistent_figures_with_every_engine() {
    let m = Mounted::new();
    for engine in ["io_uring", "libaio", "sync"] {
        let jobfile = format!(
            "[global]\nioengine={engine}\ndirect=1\nsize=32M\ntime_based\nruntime=1\niodepth=8\n\
             [read]\nrw=read\nbs=64k\n[write]\nrw=write\nbs=64k\n[randread]\nrw=randread\nbs=4k\n\
             [randwrite]\nrw=randwrite\nbs=4k\n[randrw]\nrw=randrw\nbs=4k\nrwmixread=75\n"
        );
        let run = ok_run(&m.bench(&jobfile, &m.mnt()));
        assert_eq!(run["status"], "done");
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 5);
        // This kernel (6.x) has io_uring and AIO: each runs as asked.
        assert!(
            results
                .iter()
                .all(|r| r["engine"] == engine && r["direct"] == true),
            "{engine} ran as asked: {run}"
        );
        for r in results {
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
    assert_eq!(m.entries(), ["lost+found"], "the test files are removed");
}

#[test]
fn a_size_bound_job_moves_exactly_its_size_and_follows_no_planted_link() {
    let m = Mounted::new();
    // A share's user could plant a link where a test file will go.
    let victim = m.dir().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, m.mnt().join("nasd-bench.w.0")).unwrap();
    let run = ok_run(&m.bench(
        "[w]\nrw=write\nbs=128k\nsize=16M\nioengine=libaio\ndirect=1\niodepth=4\n",
        &m.mnt(),
    ));
    assert_eq!(run["results"][0]["write"]["io_bytes"], 16u64 << 20);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert_eq!(m.entries(), ["lost+found"]);
}

#[test]
fn bad_jobs_and_targets_are_refused_by_name() {
    let m = Mounted::new();
    let unknown = m.bench("[a]\nsize=1M\nverify=md5\n", &m.mnt());
    assert!(stderr(&unknown).contains("verify: is not a fio option nasd knows"));
    let mounted = m.bench("[a]\nsize=1M\n", Path::new(&m.disk.dev));
    assert!(!mounted.status.success());
    assert!(
        stderr(&mounted).contains("confirm_device: must repeat"),
        "a device needs confirming first: {mounted:?}"
    );
    let huge = m.bench("[a]\nsize=10G\n", &m.mnt());
    assert!(
        stderr(&huge).contains("size: the test files need"),
        "{huge:?}"
    );
    let file = m.bench("[a]\nsize=1M\n", &m.config());
    assert!(
        stderr(&file).contains(
            "target: must be a directory on a mounted filesystem or a blank block device"
        ),
        "{file:?}"
    );
    assert!(
        !m.state().join("nasd.db").exists()
            || m.cli_json(&["bench", "runs", "--json"]) == json!([]),
        "a refused run leaves no record"
    );
}

#[test]
fn a_raw_device_is_written_only_when_blank_unmounted_and_confirmed() {
    let m = Mounted::new();
    let job = "[w]\nrw=randwrite\nbs=4k\nsize=16M\nioengine=libaio\ndirect=1\niodepth=16\n";
    let confirm = |dev: &str| {
        let file = m.jobfile("raw.fio", job);
        m.bench_disk(&[
            "--fio".as_ref(),
            file.as_ref(),
            "--target".as_ref(),
            dev.as_ref(),
            "--confirm-device".as_ref(),
            dev.as_ref(),
        ])
    };
    // Mounted: refused even when confirmed.
    let out = confirm(&m.disk.dev);
    assert!(
        stderr(&out).contains(&format!("target: {} is mounted at", m.disk.dev)),
        "{out:?}"
    );
    // An ext4 that is not mounted: its signature is enough to refuse.
    let ext4 = Loop::new(64 << 20);
    assert!(
        Command::new("mkfs.ext4")
            .args(["-q", &ext4.dev])
            .status()
            .unwrap()
            .success()
    );
    let out = confirm(&ext4.dev);
    assert!(
        stderr(&out).contains(
            "carries a signature (ext4): a benchmark never writes to a device that holds data"
        ),
        "{out:?}"
    );
    assert!(
        Command::new("blkid")
            .args(["-p", &ext4.dev])
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success(),
        "the ext4 is still there"
    );
    // Blank and confirmed: it runs on the device itself.
    let blank = Loop::new(64 << 20);
    let run = ok_run(&confirm(&blank.dev));
    assert_eq!(run["raw_device"], true);
    assert_eq!(run["disk"], blank.image().display().to_string());
    assert_eq!(run["context"]["device"]["transport"], "loop");
    let write = &run["results"][0]["write"];
    assert_eq!(write["io_bytes"], 16u64 << 20);
    assert!(write["iops"].as_f64().unwrap() > 10.0);
    let big = m.bench_disk(&[
        "--preset".as_ref(),
        "dbench".as_ref(),
        "--target".as_ref(),
        blank.dev.as_ref(),
        "--confirm-device".as_ref(),
        blank.dev.as_ref(),
    ]);
    assert!(
        stderr(&big).contains("size: the jobs need 2147483648 bytes"),
        "{big:?}"
    );
}

#[test]
fn the_quick_and_sbc_presets_run_their_tests() {
    let m = Mounted::new();
    let preset = |name: &str| {
        m.bench_disk(&[
            "--preset".as_ref(),
            name.as_ref(),
            "--target".as_ref(),
            m.mnt().as_ref(),
        ])
    };
    let run = ok_run(&preset("quick"));
    let results = run["results"].as_array().unwrap();
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
    for r in results {
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
    // The context of the run: this loop-mounted ext4, this kernel.
    let context = &run["context"];
    assert_eq!(context["filesystem"]["type"], "ext4");
    assert_eq!(
        context["filesystem"]["mountpoint"],
        m.mnt().display().to_string()
    );
    assert_eq!(context["device"]["transport"], "loop");
    assert!(context["kernel"].as_str().is_some_and(|k| !k.is_empty()));
    assert!(context["samples"].as_u64().unwrap() >= 20, "{context}");

    let run = ok_run(&preset("sbc"));
    let sbc = &run["sbc"];
    for key in [
        "hdparm_direct_read_mib_per_s",
        "hdparm_cached_read_mib_per_s",
        "dd_write_mb_per_s",
        "fio_randread_iops",
        "fio_randwrite_iops",
        "iozone_write_kib_per_s",
        "iozone_read_kib_per_s",
        "iozone_randread_kib_per_s",
        "iozone_randwrite_kib_per_s",
        "score",
    ] {
        assert!(sbc[key].as_f64().unwrap() > 0.0, "{key}: {sbc}");
    }
    let dd = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["job"] == "dd-write-4k-fsync")
        .unwrap();
    assert_eq!(
        dd["write"]["io_bytes"],
        80u64 * 1024 * 4096,
        "dd's count=80k bs=4k"
    );
    assert!(run["summary"].as_str().unwrap().contains("Score: "));
    assert_eq!(m.entries(), ["lost+found"]);

    let unknown = preset("fast");
    assert!(
        stderr(&unknown).contains("preset: must be one of kubestr, dbench, sbc, quick"),
        "{unknown:?}"
    );
}

#[test]
fn runs_are_kept_compared_and_a_drop_below_the_baseline_raises_one_event() {
    let m = Mounted::new();
    let job = "[rr]\nrw=randread\nbs=4k\nsize=8M\nioengine=libaio\ndirect=1\niodepth=8\n";
    // Two runs whose figures are the baseline; a threshold of 90 % keeps
    // the noise of a loop device from raising anything.
    m.set_regression_percent(90);
    let first = ok_run(&m.bench(job, &m.mnt()));
    let second = ok_run(&m.bench(job, &m.mnt()));
    assert_eq!(
        first["baseline"],
        Value::Null,
        "nothing to compare with yet"
    );
    assert_eq!(second["baseline"]["runs"], json!([first["id"]]));
    assert_eq!(second["baseline"]["regression"], false);
    // Make the stored baseline a thousand times faster than this disk.
    let store = nasd::store::Store::open(&m.state()).unwrap();
    for run in [&first, &second] {
        let mut run = run.clone();
        let iops = run["results"][0]["read"]["iops"].as_f64().unwrap();
        run["results"][0]["read"]["iops"] = json!(iops * 1000.0);
        store
            .update_disk_run(run["id"].as_i64().unwrap(), "done", &run.to_string())
            .unwrap();
    }
    m.set_regression_percent(20);
    let third = ok_run(&m.bench(job, &m.mnt()));
    let id = third["id"].as_i64().unwrap();
    assert_eq!(third["baseline"]["regression"], true, "{third}");
    let events = store.events("bench", 10).unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(
        events[0].1.contains(&format!("disk benchmark #{id}")) && events[0].1.contains("rr read"),
        "{events:?}"
    );

    let runs = m.cli_json(&["bench", "runs", "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 3);
    assert_eq!(runs[0]["id"], id, "newest first");
    let text = m.nasd().args(["bench", "runs"]).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("REGRESSION"));
    let cmp = m.cli_json(&["bench", "compare", "2", &id.to_string(), "--json"]);
    let ratio = cmp["jobs"][0]["read"]["iops"]["ratio"].as_f64().unwrap();
    assert!(ratio < 0.01, "b / a: {cmp}");
    let text = m
        .nasd()
        .args(["bench", "compare", "1", &id.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("(ratios are B / A)") && text.contains("rr"),
        "{text}"
    );
    let missing = m.nasd().args(["bench", "show", "99"]).output().unwrap();
    assert!(stderr(&missing).contains("no disk benchmark run #99"));
}

#[test]
fn ctrl_c_cancels_a_run_and_removes_its_files() {
    let m = Mounted::new();
    let job = m.jobfile("long.fio", LONG_JOB);
    let running = m
        .nasd()
        .args(["bench", "disk", "--json", "--fio"])
        .arg(&job)
        .arg("--target")
        .arg(m.mnt())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let test_file = m.mnt().join("nasd-bench.long.0");
    wait_for("the test file", 20, || test_file.exists());
    std::thread::sleep(Duration::from_millis(500));
    let pid = running.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = running.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cancelled"), "{out:?}");
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["status"], "cancelled");
    assert_eq!(m.entries(), ["lost+found"]);
}

#[test]
fn a_killed_run_holds_no_lock_and_the_daemon_cleans_up_at_start() {
    let m = Mounted::new();
    std::fs::write(m.mnt().join("keep.txt"), "the user's").unwrap();
    let job = m.jobfile("long.fio", LONG_JOB);
    let mut running = m
        .nasd()
        .args(["bench", "disk", "--fio"])
        .arg(&job)
        .arg("--target")
        .arg(m.mnt())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let test_file = m.mnt().join("nasd-bench.long.0");
    wait_for("the test file", 20, || test_file.exists());

    let second = m.bench("[a]\nsize=1M\n", &m.mnt());
    assert!(!second.status.success());
    assert!(
        stderr(&second).contains("target: a disk benchmark is already running there"),
        "{second:?}"
    );

    running.kill().unwrap();
    running.wait().unwrap();
    assert!(test_file.exists(), "SIGKILL leaves the file behind");
    assert_eq!(
        m.cli_json(&["bench", "show", "1", "--json"])["status"],
        "running",
        "the record still says running"
    );

    // The daemon, started on the same data directory, removes the files
    // and marks the run interrupted.
    let mut daemon = m
        .nasd()
        .args(["serve", "--listen", "127.0.0.1:0", "--iperf3-port", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the cleanup", 20, || !test_file.exists());
    let run = m.cli_json(&["bench", "show", "1", "--json"]);
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert_eq!(run["status"], "interrupted", "{run}");
    assert_eq!(m.entries(), ["keep.txt", "lost+found"]);

    let next = m.bench("[a]\nsize=1M\nrw=write\n", &m.mnt());
    assert!(
        next.status.success(),
        "the lock died with the process: {next:?}"
    );
}

#[test]
fn fio_shaped_output_reads_like_fios() {
    let m = Mounted::new();
    let job = m.jobfile(
        "w.fio",
        "[w]\nrw=write\nbs=128k\nsize=16M\nioengine=libaio\ndirect=1\niodepth=4\n",
    );
    let out = m
        .nasd()
        .args(["bench", "disk", "--fio-json", "--fio"])
        .arg(&job)
        .arg("--target")
        .arg(m.mnt())
        .output()
        .unwrap();
    let doc = ok_run(&out);
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

fn poll_run(
    d: &Daemon,
    session: &str,
    id: i64,
    secs: u64,
    until: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let reply = d.get(&format!("bench/runs/{id}"), Some(session));
        assert_eq!(reply.status, 200, "{}", reply.body);
        if until(&reply.body) {
            return reply.body;
        }
        assert!(
            Instant::now() < deadline,
            "run #{id} stuck at {}",
            reply.body
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_api_starts_follows_and_cancels_a_run() {
    let m = Mounted::new();
    let d = Daemon::start_with(Path::new("/"), "iperf3_port = 0\n", &[]);
    let session = d.set_up();
    let target = m.mnt().display().to_string();

    let both = d.post(
        "bench/disk",
        json!({"preset": "quick", "jobfile": "[a]\nsize=1M\n", "target": target}),
        Some(&session),
    );
    assert_eq!(
        (both.status, both.body["field"].as_str()),
        (400, Some("preset"))
    );
    let unknown_key = d.post(
        "bench/disk",
        json!({"jobfile": "[a]\nsize=1M\nzonemode=zbd\n", "target": target}),
        Some(&session),
    );
    assert_eq!(
        (unknown_key.status, unknown_key.body["field"].as_str()),
        (400, Some("zonemode"))
    );
    let raw = d.post(
        "bench/disk",
        json!({"preset": "quick", "target": m.disk.dev, "confirm_device": m.disk.dev}),
        Some(&session),
    );
    assert_eq!(
        (raw.status, raw.body["field"].as_str()),
        (400, Some("target"))
    );
    assert!(
        raw.body["error"]
            .as_str()
            .unwrap()
            .contains("is mounted at")
    );

    let started = d.post(
        "bench/disk",
        json!({"jobfile": LONG_JOB, "target": target}),
        Some(&session),
    );
    assert_eq!(started.status, 202, "{}", started.body);
    assert_eq!(started.body["status"], "running");
    let id = started.body["id"].as_i64().unwrap();
    let moving = poll_run(&d, &session, id, 20, |r| {
        r["progress"]["fraction"].as_f64().unwrap_or(0.0) > 0.0
    });
    assert_eq!(moving["progress"]["job"], "long");
    let busy = d.post(
        "bench/disk",
        json!({"jobfile": LONG_JOB, "target": target}),
        Some(&session),
    );
    assert_eq!(busy.status, 409);
    assert!(
        busy.body["error"]
            .as_str()
            .unwrap()
            .contains("already running on this disk"),
        "{}",
        busy.body
    );
    let list = d.get("bench/runs", Some(&session));
    assert_eq!(list.body[0]["id"], id);
    assert!(list.body[0]["progress"].is_object());

    let cancel = d.post(
        &format!("bench/runs/{id}/cancel"),
        json!({}),
        Some(&session),
    );
    assert_eq!(cancel.status, 202, "{}", cancel.body);
    let done = poll_run(&d, &session, id, 20, |r| r["status"] != "running");
    assert_eq!(done["status"], "cancelled");
    assert_eq!(done["progress"], Value::Null);
    assert_eq!(m.entries(), ["lost+found"]);
    let again = d.post(
        &format!("bench/runs/{id}/cancel"),
        json!({}),
        Some(&session),
    );
    assert_eq!(again.status, 409);
    assert_eq!(d.get("bench/runs/999", Some(&session)).status, 404);
    let cmp = d.get(&format!("bench/compare?a={id}&b={id}"), Some(&session));
    assert_eq!(cmp.status, 200, "{}", cmp.body);
    assert_eq!(d.get("bench/runs", None).status, 401);
}

#[test]
fn a_run_stops_when_a_thermal_zone_nears_its_trip_point() {
    // The HC4's sysfs cannot exist here: a copy of its fixture tree stands
    // in for /sys, while the benchmark itself runs on a real loop mount.
    let board = tempfile::tempdir().unwrap();
    let root = board.path().join("root");
    assert!(
        Command::new("cp")
            .arg("-a")
            .arg(fixture("odroid-hc4"))
            .arg(&root)
            .status()
            .unwrap()
            .success()
    );
    let m = Mounted::new();
    let d = Daemon::start_with(&root, "iperf3_port = 0\n", &[]);
    let session = d.set_up();
    let started = d.post(
        "bench/disk",
        json!({"jobfile": LONG_JOB, "target": m.mnt().display().to_string()}),
        Some(&session),
    );
    assert_eq!(started.status, 202, "{}", started.body);
    let id = started.body["id"].as_i64().unwrap();
    poll_run(&d, &session, id, 20, |r| {
        r["progress"]["fraction"].as_f64().unwrap_or(0.0) > 0.0
    });
    // The passive trip point is at 85 °C; 82 °C is within the margin.
    std::fs::write(
        root.join("sys/devices/virtual/thermal/thermal_zone0/temp"),
        "82000\n",
    )
    .unwrap();
    let run = poll_run(&d, &session, id, 20, |r| r["status"] != "running");
    assert_eq!(run["status"], "aborted", "{run}");
    let why = run["error"].as_str().unwrap();
    assert!(
        why.contains("thermal_zone0") && why.contains("passive trip point at 85.0"),
        "{why}"
    );
    let zone = &run["context"]["temperatures"][0];
    assert_eq!(zone["before_c"], 41.5);
    assert_eq!(zone["max_c"], 82.0);
    assert_eq!(run["context"]["cpu"][0]["policy"], "policy0");
    assert_eq!(m.entries(), ["lost+found"]);
}
