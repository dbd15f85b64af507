//! Schedules, the job history and notifications through the daemon's API
//! and the command line. Jobs run for real: disk benchmarks on loop-mounted
//! ext4 (root), network tests against the daemon's own iperf3 server,
//! health checks on a copy of the HC4 fixture tree (the board is not here;
//! the test raises a temperature in the copy). The notification peers are
//! a small HTTP listener and a small SMTP listener started by the tests.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Daemon, fixture};
use serde_json::{Value, json};

fn board_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    assert!(
        Command::new("cp")
            .arg("-a")
            .arg(fixture("odroid-hc4"))
            .arg(&root)
            .status()
            .unwrap()
            .success()
    );
    (dir, root)
}

/// On the real host the busy gate reads its real load, which a CI machine
/// running builds beside the tests often has: raised out of the way.
const REAL_HOST_CONFIG: &str = "iperf3_port = 0\nbusy_load_per_cpu = 100\n";

fn start(root: &Path, config: &str) -> (Daemon, String) {
    let d = Daemon::start_with(root, config, &[]);
    let session = d.set_up();
    (d, session)
}

fn add(d: &Daemon, session: &str, body: Value) -> Value {
    let reply = d.post("schedules", body, Some(session));
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.body
}

/// Runs schedule `id` now and waits for its (first) job to finish.
fn run_and_wait(d: &Daemon, session: &str, id: &Value, secs: u64) -> Value {
    let reply = d.post(&format!("schedules/{id}/run"), json!({}), Some(session));
    assert_eq!(reply.status, 202, "{}", reply.body);
    let job = reply.body["jobs"][0].as_i64().unwrap();
    wait_job(d, session, job, secs, |j| {
        !matches!(j["status"].as_str(), Some("queued" | "running"))
    })
}

fn wait_job(
    d: &Daemon,
    session: &str,
    job: i64,
    secs: u64,
    until: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let reply = d.get(&format!("jobs/{job}"), Some(session));
        assert_eq!(reply.status, 200, "{}", reply.body);
        if until(&reply.body) {
            return reply.body;
        }
        assert!(
            Instant::now() < deadline,
            "job #{job} stuck: {}",
            reply.body
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn events(d: &Daemon, session: &str, source: &str) -> Vec<Value> {
    d.get("events", Some(session))
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == source)
        .cloned()
        .collect()
}

#[test]
fn schedules_are_checked_listed_previewed_and_edited() {
    let (_board, root) = board_copy();
    let (d, session) = start(&root, "iperf3_port = 0\n");
    // A fresh install has its default self-tests.
    let list = d.get("schedules", Some(&session)).body;
    let kinds: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["job"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "smart_test",
            "smart_test",
            "health_check",
            "disk_benchmark",
            "maintenance"
        ]
    );
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|s| s["next_runs"].as_array().unwrap().len() == 3)
    );
    assert_eq!(list[0]["job"]["test"], "short");
    assert_eq!(list[1]["job"]["test"], "long");

    let bad = d.post(
        "schedules",
        json!({"name": "x", "cron": "0 25 * * *", "job": {"kind": "health_check"}}),
        Some(&session),
    );
    assert_eq!(
        (bad.status, bad.body["field"].as_str()),
        (400, Some("cron"))
    );
    assert!(
        bad.body["error"]
            .as_str()
            .unwrap()
            .contains("hour field '25'"),
        "{}",
        bad.body
    );
    let bad = d.post(
        "schedules",
        json!({"name": "x", "cron": "@daily", "job": {"kind": "disk_benchmark", "disk": "sda; reboot", "preset": "quick"}}),
        Some(&session),
    );
    assert_eq!(bad.body["field"], "job.disk", "{}", bad.body);
    let preview = d.get("schedules/preview?cron=%40daily", Some(&session));
    assert_eq!(
        preview.body["next_runs"].as_array().unwrap().len(),
        3,
        "{}",
        preview.body
    );

    let s = add(
        &d,
        &session,
        json!({"name": "nightly", "cron": "15 2 * * *", "job": {"kind": "health_check"}}),
    );
    let id = &s["id"];
    assert!(
        s["next_runs"][0].as_str().unwrap().contains("T02:15:00"),
        "{s}"
    );
    let off = d.send(
        "PUT",
        &format!("schedules/{id}"),
        json!({"name": "nightly", "cron": "15 2 * * *", "job": {"kind": "health_check"}, "enabled": false}),
        &session,
    );
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(off.body["next_runs"], json!([]));
    assert_eq!(
        d.send("DELETE", &format!("schedules/{id}"), json!({}), &session)
            .status,
        204
    );
    assert_eq!(
        d.get(&format!("schedules/{id}"), Some(&session)).status,
        404
    );
    assert_eq!(d.get("schedules", None).status, 401);
    assert_eq!(d.get("jobs", None).status, 401);
}

#[test]
fn a_health_check_reports_new_findings_once() {
    let (_board, root) = board_copy();
    let (d, session) = start(&root, "iperf3_port = 0\n");
    let s = add(
        &d,
        &session,
        json!({"name": "health", "cron": "@daily", "job": {"kind": "health_check"}}),
    );
    let first = run_and_wait(&d, &session, &s["id"], 30);
    assert!(
        matches!(first["status"].as_str(), Some("ok" | "warning")),
        "{first}"
    );
    assert!(first["output"]["findings"].is_array());
    // 80 °C is within 10 °C of the HC4's 85 °C passive trip point.
    std::fs::write(
        root.join("sys/devices/virtual/thermal/thermal_zone0/temp"),
        "80000\n",
    )
    .unwrap();
    let hot = run_and_wait(&d, &session, &s["id"], 30);
    assert_eq!(hot["status"], "warning", "{hot}");
    assert!(
        hot["message"].as_str().unwrap().contains("thermal_zone0"),
        "{hot}"
    );
    let again = run_and_wait(&d, &session, &s["id"], 30);
    assert_eq!(again["status"], "warning");
    let hot_events: Vec<Value> = events(&d, &session, "schedule")
        .into_iter()
        .filter(|e| e["message"].as_str().unwrap().contains("thermal_zone0"))
        .collect();
    assert_eq!(
        hot_events.len(),
        1,
        "a finding raises one event: {hot_events:?}"
    );
    assert_eq!(hot_events[0]["severity"], "warning");
    let jobs = d.get("jobs", Some(&session)).body;
    let mine: Vec<&Value> = jobs
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["schedule_id"] == s["id"])
        .collect();
    assert_eq!(mine.len(), 3);
    assert!(mine[0]["duration_secs"].as_f64().is_some());
}

#[test]
fn a_schedule_fires_at_its_minute() {
    let (_board, root) = board_copy();
    let (d, session) = start(&root, "iperf3_port = 0\n");
    let s = add(
        &d,
        &session,
        json!({"name": "every minute", "cron": "* * * * *", "job": {"kind": "maintenance"}}),
    );
    let deadline = Instant::now() + Duration::from_secs(75);
    let job = loop {
        let jobs = d.get("jobs", Some(&session)).body;
        if let Some(job) = jobs
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["schedule_id"] == s["id"] && j["status"] == "ok")
        {
            break job.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the schedule did not fire: {jobs}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(
        job["message"]
            .as_str()
            .unwrap()
            .contains("expired old samples"),
        "{job}"
    );
    assert!(
        d.get(&format!("schedules/{}", s["id"]), Some(&session))
            .body["last_run_at"]
            .is_i64()
    );
}

/// A loop device with an ext4, mounted, or blank.
struct LoopDisk {
    dir: tempfile::TempDir,
    dev: String,
}

impl LoopDisk {
    fn new(mounted: bool) -> Self {
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
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(dev.starts_with("/dev/loop"), "{out:?}");
        let disk = LoopDisk { dir, dev };
        if mounted {
            assert!(
                Command::new("mkfs.ext4")
                    .args(["-q", &disk.dev])
                    .status()
                    .unwrap()
                    .success()
            );
            std::fs::create_dir(disk.mnt()).unwrap();
            assert!(
                Command::new("mount")
                    .arg(&disk.dev)
                    .arg(disk.mnt())
                    .status()
                    .unwrap()
                    .success()
            );
        }
        disk
    }

    fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }

    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    fn test_files(&self) -> Vec<String> {
        std::fs::read_dir(self.mnt())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .filter(|n| n.starts_with("nasd-bench."))
            .collect()
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mnt()).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

#[test]
fn a_disk_that_is_not_mounted_or_present_is_a_clear_skip() {
    let blank = LoopDisk::new(false);
    let (d, session) = start(Path::new("/"), REAL_HOST_CONFIG);
    let s = add(
        &d,
        &session,
        json!({"name": "bench", "cron": "@weekly", "job": {"kind": "disk_benchmark", "disk": blank.name(), "preset": "quick"}}),
    );
    let job = run_and_wait(&d, &session, &s["id"], 30);
    assert_eq!(job["status"], "skipped", "{job}");
    assert_eq!(
        job["message"],
        format!(
            "disk {} is not mounted: there is nowhere to benchmark",
            blank.name()
        )
    );
    let s = add(
        &d,
        &session,
        json!({"name": "gone", "cron": "@weekly", "job": {"kind": "smart_test", "disk": "sdzz", "test": "short"}}),
    );
    let job = run_and_wait(&d, &session, &s["id"], 30);
    assert_eq!(
        (job["status"].as_str(), job["message"].as_str()),
        (Some("skipped"), Some("disk sdzz is not present"))
    );
    // A loop device has no SMART: a test of it is skipped, saying so.
    let s = add(
        &d,
        &session,
        json!({"name": "smart", "cron": "@weekly", "job": {"kind": "smart_test", "disk": blank.name(), "test": "short"}}),
    );
    let job = run_and_wait(&d, &session, &s["id"], 30);
    assert_eq!(
        job["message"],
        format!("disk {} has no SMART", blank.name()),
        "{job}"
    );
}

#[test]
fn a_timeout_or_a_cancel_stops_the_job_and_removes_its_files() {
    let disk = LoopDisk::new(true);
    let (d, session) = start(Path::new("/"), REAL_HOST_CONFIG);
    let job = json!({"kind": "disk_benchmark", "disk": disk.name(), "preset": "quick"});
    let s = add(
        &d,
        &session,
        json!({"name": "short leash", "cron": "@weekly", "job": job, "timeout_secs": 12}),
    );
    let started = Instant::now();
    let timed_out = run_and_wait(&d, &session, &s["id"], 60);
    assert_eq!(timed_out["status"], "timeout", "{timed_out}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the quick preset takes 30 s"
    );
    assert!(disk.test_files().is_empty(), "{:?}", disk.test_files());
    let runs = d.get("bench/runs", Some(&session)).body;
    assert_eq!(
        runs[0]["status"], "cancelled",
        "the benchmark itself stopped: {}",
        runs[0]
    );

    let s = add(
        &d,
        &session,
        json!({"name": "cancel me", "cron": "@weekly", "job": job}),
    );
    let reply = d.post(
        &format!("schedules/{}/run", s["id"]),
        json!({}),
        Some(&session),
    );
    let id = reply.body["jobs"][0].as_i64().unwrap();
    wait_job(&d, &session, id, 30, |j| j["status"] == "running");
    let deadline = Instant::now() + Duration::from_secs(30);
    while disk.test_files().is_empty() {
        assert!(Instant::now() < deadline, "the benchmark did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let cancel = d.post(&format!("jobs/{id}/cancel"), json!({}), Some(&session));
    assert_eq!(cancel.status, 202, "{}", cancel.body);
    let cancelled = wait_job(&d, &session, id, 30, |j| j["status"] != "running");
    assert_eq!(cancelled["status"], "cancelled");
    assert!(disk.test_files().is_empty());
    let again = d.post(&format!("jobs/{id}/cancel"), json!({}), Some(&session));
    assert_eq!(again.status, 409);
    // Failures and timeouts are events.
    assert!(
        events(&d, &session, "schedule")
            .iter()
            .any(|e| e["message"].as_str().unwrap().contains("timeout")),
    );
}

#[test]
fn a_slower_network_result_raises_exactly_one_regression_event() {
    let (_board, root) = board_copy();
    let port = common::free_port();
    let (d, session) = start(&root, &format!("iperf3_port = {port}\n"));
    let s = add(
        &d,
        &session,
        json!({"name": "net", "cron": "@daily", "job": {"kind": "net_benchmark", "peer": format!("127.0.0.1:{port}"), "time": 1}}),
    );
    let first = run_and_wait(&d, &session, &s["id"], 30);
    assert_eq!(first["status"], "ok", "{first}");
    let bps = first["output"]["bits_per_second"].as_f64().unwrap();
    assert!(bps > 1e6, "{first}");
    // The recorded result becomes a thousand times faster than this link.
    let store = nasd::store::Store::open(&d.state_dir().join("state")).unwrap();
    let id = first["id"].as_i64().unwrap();
    let mut faster = first.clone();
    faster["output"]["bits_per_second"] = json!(bps * 1000.0);
    store.update_job_run(id, "ok", &faster.to_string()).unwrap();
    let second = run_and_wait(&d, &session, &s["id"], 30);
    assert_eq!(second["status"], "warning", "{second}");
    assert!(second["output"]["ratio"].as_f64().unwrap() < 0.01);
    let regressions: Vec<Value> = events(&d, &session, "schedule")
        .into_iter()
        .filter(|e| e["message"].as_str().unwrap().contains("below the median"))
        .collect();
    assert_eq!(regressions.len(), 1, "{regressions:?}");
    assert_eq!(regressions[0]["severity"], "warning");
}

#[test]
fn heavy_jobs_run_one_at_a_time() {
    let (_board, root) = board_copy();
    let port = common::free_port();
    let (d, session) = start(&root, &format!("iperf3_port = {port}\n"));
    // The daemon's iperf3 server takes one test at a time: two network
    // jobs that overlapped would fail, queued they both pass.
    // Different lengths: two targets, so neither is compared with the other
    // (loopback throughput varies by more than the regression threshold).
    let job = |time: u32| json!({"kind": "net_benchmark", "peer": format!("127.0.0.1:{port}"), "time": time});
    let a = add(
        &d,
        &session,
        json!({"name": "a", "cron": "@daily", "job": job(2)}),
    );
    let b = add(
        &d,
        &session,
        json!({"name": "b", "cron": "@daily", "job": job(3)}),
    );
    let ids: Vec<i64> = [&a, &b]
        .iter()
        .map(|s| {
            let reply = d.post(
                &format!("schedules/{}/run", s["id"]),
                json!({}),
                Some(&session),
            );
            reply.body["jobs"][0].as_i64().unwrap()
        })
        .collect();
    let done: Vec<Value> = ids
        .iter()
        .map(|id| {
            wait_job(&d, &session, *id, 60, |j| {
                !matches!(j["status"].as_str(), Some("queued" | "running"))
            })
        })
        .collect();
    assert!(done.iter().all(|j| j["status"] == "ok"), "{done:?}");
    assert!(
        done[1]["started_at"].as_i64() >= done[0]["finished_at"].as_i64(),
        "the second waited for the first: {done:?}"
    );
}

/// An HTTP listener that answers 200 and passes on each request's head
/// and body.
fn http_listener() -> (u16, mpsc::Receiver<(String, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let mut stream = reader.into_inner();
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}");
            let _ = tx.send((head, String::from_utf8_lossy(&body).into_owned()));
        }
    });
    (port, rx)
}

/// An SMTP listener speaking just enough of RFC 5321 to take a message;
/// passes on each message's data.
fn smtp_listener() -> (u16, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut out = stream.try_clone().unwrap();
            let mut reader = BufReader::new(stream);
            let _ = out.write_all(b"220 test ESMTP\r\n");
            let mut data: Option<String> = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(d) = data.as_mut() {
                    if line == ".\r\n" {
                        let _ = tx.send(data.take().unwrap());
                        let _ = out.write_all(b"250 queued\r\n");
                    } else {
                        d.push_str(&line);
                    }
                    continue;
                }
                let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
                let reply: &[u8] = match verb.as_str() {
                    "EHLO" | "HELO" => b"250 test\r\n",
                    "DATA" => {
                        data = Some(String::new());
                        b"354 go on\r\n"
                    }
                    "QUIT" => {
                        let _ = out.write_all(b"221 bye\r\n");
                        break;
                    }
                    _ => b"250 ok\r\n",
                };
                let _ = out.write_all(reply);
            }
        }
    });
    (port, rx)
}

#[test]
fn notifications_reach_a_webhook_and_a_mailbox_by_severity() {
    let (_board, root) = board_copy();
    let (d, session) = start(&root, "iperf3_port = 0\n");
    let (http_port, hooks) = http_listener();
    let (smtp_port, mails) = smtp_listener();
    let settings = d.send(
        "PUT",
        "notifications",
        json!({
            "webhook": {"url": format!("http://127.0.0.1:{http_port}/"), "topic": "nas", "token": "tk-secret", "min_severity": "warning"},
            "email": {"host": "127.0.0.1", "port": smtp_port, "security": "none",
                      "from": "nas@example.com", "to": ["owner@example.com"], "min_severity": "critical"},
        }),
        &session,
    );
    assert_eq!(settings.status, 200, "{}", settings.body);
    let shown = d.get("notifications", Some(&session)).body.to_string();
    assert!(!shown.contains("tk-secret"), "{shown}");
    assert!(shown.contains("\"token_set\":true"));
    let bad = d.send(
        "PUT",
        "notifications",
        json!({"webhook": {"url": "gopher://x"}}),
        &session,
    );
    assert_eq!(
        (bad.status, bad.body["field"].as_str()),
        (400, Some("webhook.url"))
    );
    // A password is never sent in clear.
    let clear = d.send(
        "PUT",
        "notifications",
        json!({"email": {"host": "127.0.0.1", "security": "none", "username": "nas", "password": "pw",
                         "from": "nas@example.com", "to": ["owner@example.com"]}}),
        &session,
    );
    assert_eq!(clear.body["field"], "email.security", "{}", clear.body);

    let test = d.post("notifications/test", json!({}), Some(&session));
    assert_eq!(test.status, 200, "{}", test.body);
    assert_eq!(test.body["webhook"]["sent"], true, "{}", test.body);
    assert_eq!(test.body["email"]["sent"], true, "{}", test.body);
    let (head, body) = hooks.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("authorization: bearer tk-secret"),
        "{head}"
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["topic"], "nas");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("test notification")
    );
    let mail = mails.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        mail.contains("This is a test notification from nasd."),
        "{mail}"
    );
    assert!(mail.contains("To: owner@example.com"), "{mail}");

    // A failing job is a warning: the webhook gets it, the mailbox (which
    // wants critical only) does not.
    let s = add(
        &d,
        &session,
        json!({"name": "net", "cron": "@daily", "job": {"kind": "net_benchmark", "peer": format!("127.0.0.1:{}", common::free_port()), "time": 1}}),
    );
    let failed = run_and_wait(&d, &session, &s["id"], 60);
    assert_eq!(failed["status"], "failed", "{failed}");
    // Other warnings (monitoring, tuning) may come first: look for this one.
    let deadline = Instant::now() + Duration::from_secs(40);
    let body = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (_, body) = hooks.recv_timeout(left).expect("the event is delivered");
        let body: Value = serde_json::from_str(&body).unwrap();
        if body["message"].as_str().unwrap().contains("failed") {
            break body;
        }
    };
    assert_eq!(body["priority"], 4, "{body}");
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        mails.try_recv().is_err(),
        "a warning does not reach a critical-only mailbox"
    );
}

#[test]
fn the_command_line_adds_runs_lists_and_removes_schedules() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("nasd.toml");
    std::fs::write(
        &config,
        format!("data_dir = \"{}\"\n", dir.path().join("state").display()),
    )
    .unwrap();
    let nasd = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_nasd"))
            .arg("--config")
            .arg(&config)
            .arg("--root")
            .arg(fixture("odroid-hc4"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out, err) = nasd(&[
        "schedule",
        "add",
        "--name",
        "upkeep",
        "--cron",
        "@weekly",
        "--job",
        r#"{"kind":"maintenance"}"#,
    ]);
    assert!(ok, "{err}");
    assert!(out.starts_with("added schedule #1"), "{out}");
    let (ok, _, err) = nasd(&[
        "schedule",
        "add",
        "--name",
        "x",
        "--cron",
        "61 * * * *",
        "--job",
        r#"{"kind":"maintenance"}"#,
    ]);
    assert!(!ok && err.contains("cron: minute field '61'"), "{err}");
    let (_, out, _) = nasd(&["schedule", "list"]);
    assert!(
        out.contains("#1 upkeep: @weekly maintenance (system)") && out.contains("next "),
        "{out}"
    );
    let (ok, out, err) = nasd(&["schedule", "run", "1", "--json"]);
    assert!(ok, "{err}");
    let runs: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(runs[0]["status"], "ok", "{runs}");
    let (_, out, _) = nasd(&["jobs"]);
    assert!(out.contains("ok") && out.contains("maintenance"), "{out}");
    let (ok, out, _) = nasd(&["schedule", "remove", "1"]);
    assert!(ok && out.contains("removed schedule #1"));
    let (ok, _, err) = nasd(&["schedule", "remove", "1"]);
    assert!(!ok && err.contains("no schedule #1"), "{err}");
}
