//! Monitoring against a copy of the XU4 fixture tree (the board is not
//! here; see tests/fixtures/README.md) whose frequency, temperature and
//! counter files the test rewrites while the daemon samples every second.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Daemon, fixture};
use serde_json::Value;

const POLICY4: &str = "sys/devices/system/cpu/cpufreq/policy4";
const ZONE0: &str = "sys/devices/virtual/thermal/thermal_zone0";

struct Board {
    dir: tempfile::TempDir,
}

impl Board {
    fn copy() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("cp")
            .arg("-a")
            .arg(fixture("odroid-xu4"))
            .arg(dir.path().join("root"))
            .status()
            .unwrap()
            .success();
        assert!(ok);
        Board { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn write(&self, path: &str, value: &str) {
        std::fs::write(self.root().join(path), format!("{value}\n")).unwrap();
    }
}

fn start(board: &Board, commit_secs: u32) -> (Daemon, String) {
    let config = format!(
        "sample_interval_secs = 1\ncommit_interval_secs = {commit_secs}\niperf3_port = 0\n"
    );
    let d = Daemon::start_with(&board.root(), &config, &[]);
    let session = d.set_up();
    (d, session)
}

fn values(d: &Daemon, session: &str, series: &str) -> Vec<f64> {
    let url = format!("metrics/query?series={}&points=10000", urlencode(series));
    let reply = d.get(&url, Some(session));
    if reply.status != 200 {
        return Vec::new();
    }
    reply.body["avg"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn stored_series_hold_exactly_the_values_the_board_showed() {
    let board = Board::copy();
    let (d, session) = start(&board, 1);
    let freq = "cpu_frequency_hertz{policy=\"policy4\"}";
    let temp = "temperature_celsius{sensor=\"thermal_zone0\",type=\"cpu0-thermal\"}";
    board.write(&format!("{POLICY4}/scaling_cur_freq"), "1800000");
    board.write(&format!("{ZONE0}/temp"), "61500");
    wait_for("1.8 GHz and 61.5 C", || {
        values(&d, &session, freq).contains(&1.8e9) && values(&d, &session, temp).contains(&61.5)
    });
    board.write(&format!("{POLICY4}/scaling_cur_freq"), "600000");
    wait_for("600 MHz", || values(&d, &session, freq).contains(&6e8));
    let seen = values(&d, &session, freq);
    let allowed = [1e9, 1.8e9, 6e8];
    assert!(
        seen.iter().all(|v| allowed.contains(v)),
        "only values the board showed: {seen:?}"
    );

    let series: Vec<String> =
        serde_json::from_value(d.get("metrics/series", Some(&session)).body).unwrap();
    for expected in [freq, temp, "load{period=\"1\"}", "memory_available_bytes"] {
        assert!(
            series.iter().any(|s| s == expected),
            "{expected} in {series:?}"
        );
    }
    assert!(
        !series.iter().any(|s| s.contains("hwmon")),
        "the XU4 has no hwmon temperatures: none invented"
    );
    assert!(
        !series.iter().any(|s| s.starts_with("cpu_utilisation")),
        "no CPU time passed in the fixture: no figure"
    );

    // 30 busy jiffies out of every 100: a utilisation of 0.3.
    let mut base = 1_000_000u64;
    let busy = "cpu_utilisation_ratio{cpu=\"cpu\"}";
    wait_for("30 % busy", || {
        base += 100;
        let (user, idle) = (base * 3 / 10, base * 7 / 10);
        board.write("proc/stat", &format!("cpu  {user} 0 0 {idle} 0 0 0 0 0 0"));
        std::thread::sleep(Duration::from_millis(1100));
        values(&d, &session, busy).contains(&0.3)
    });
}

#[test]
fn time_at_each_frequency_comes_from_time_in_state_deltas() {
    let board = Board::copy();
    let (d, session) = start(&board, 1);
    let path = format!("{POLICY4}/stats/time_in_state");
    let table = |ticks_2000: u64, ticks_200: u64| {
        let mut text = String::new();
        for khz in (200_000..=2_000_000).step_by(100_000) {
            let ticks = match khz {
                200_000 => ticks_200,
                2_000_000 => ticks_2000,
                _ => 10,
            };
            text.push_str(&format!("{khz} {ticks}\n"));
        }
        text
    };
    board.write(&path, &table(1000, 1000));
    std::thread::sleep(Duration::from_millis(1500));
    // From now on, three ticks at 2 GHz for every one at 200 MHz.
    let (mut top, mut bottom) = (1000, 1000);
    let at_top = "cpu_time_at_frequency_ratio{policy=\"policy4\",khz=\"2000000\"}";
    wait_for("a 0.75 share at 2 GHz", || {
        top += 30;
        bottom += 10;
        board.write(&path, &table(top, bottom));
        std::thread::sleep(Duration::from_millis(1100));
        values(&d, &session, at_top).contains(&0.75)
    });
}

#[test]
fn a_counter_that_restarts_gives_no_spike() {
    let board = Board::copy();
    let (d, session) = start(&board, 1);
    let stats = board.root().join("proc/diskstats");
    let original = std::fs::read_to_string(&stats).unwrap();
    let with_sda_read = |sectors: u64| original.replace("180223456", &sectors.to_string());
    std::fs::write(&stats, with_sda_read(180_223_456)).unwrap();
    let rate = "disk_read_bytes_per_second{disk=\"sda\"}";
    // 2048 sectors (1 MiB) a second, then the disk is re-plugged: 0.
    let mut sectors = 180_223_456;
    wait_for("a read rate", || {
        sectors += 2048;
        std::fs::write(&stats, with_sda_read(sectors)).unwrap();
        std::thread::sleep(Duration::from_millis(1000));
        !values(&d, &session, rate).is_empty()
    });
    std::fs::write(&stats, with_sda_read(16)).unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let seen = values(&d, &session, rate);
    assert!(
        seen.iter().all(|v| *v < 10e6),
        "no spike after the restart: {seen:?}"
    );
}

#[test]
fn prometheus_needs_its_token_and_shows_the_latest_values() {
    let board = Board::copy();
    let (d, session) = start(&board, 300);
    let scrape = |token: Option<&str>| {
        let mut req = d.agent.get(format!("http://{}/metrics", d.host));
        if let Some(t) = token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        let mut resp = req.call().unwrap();
        (
            resp.status().as_u16(),
            resp.body_mut().read_to_string().unwrap_or_default(),
        )
    };
    assert_eq!(scrape(None).0, 401);
    let token = d
        .send("POST", "metrics/token", serde_json::json!({}), &session)
        .body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(scrape(Some("wrong")).0, 401);
    wait_for("a scrape with values", || {
        scrape(Some(&token)).1.contains("nasd_cpu_frequency_hertz")
    });
    let (status, text) = scrape(Some(&token));
    assert_eq!(status, 200);
    assert!(
        text.contains("# TYPE nasd_cpu_frequency_hertz gauge\n"),
        "{text}"
    );
    assert!(
        text.contains("nasd_cpu_frequency_hertz{policy=\"policy4\"} 1000000000\n"),
        "{text}"
    );
    assert!(
        text.contains("nasd_network_receive_bytes_total{interface=\"eth0\"} 912345678\n"),
        "{text}"
    );
    assert_eq!(
        d.send("DELETE", "metrics/token", serde_json::json!(null), &session)
            .status,
        204
    );
    assert_eq!(scrape(Some(&token)).0, 401, "revoked");
}

#[test]
fn a_usb_disk_at_usb2_speed_raises_an_event() {
    let board = Board::copy();
    let (d, session) = start(&board, 300);
    wait_for("the USB 2 event", || {
        let events = d.get("events", Some(&session)).body;
        events.as_array().unwrap().iter().any(|e| {
            e["source"] == "monitor"
                && e["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("sdb is a USB 3 disk running at 480 Mbit/s")
        })
    });
    let own: Value = d.get("metrics/self", Some(&session)).body;
    assert!(own["written_bytes"].is_u64() && own["uptime_secs"].is_u64());
}

#[test]
fn a_kill_between_commits_loses_at_most_one_batch_and_leaves_the_database_sound() {
    let board = Board::copy();
    let (mut d, _session) = start(&board, 2);
    std::thread::sleep(Duration::from_secs(5));
    let killed_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    d.child.kill().unwrap(); // SIGKILL: no graceful commit
    d.child.wait().unwrap();
    let db = d.state_dir().join("state/nasd.db");
    let conn = rusqlite::Connection::open(Path::new(&db)).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let newest: i64 = conn
        .query_row("SELECT max(t) FROM metric_raw", [], |r| r.get(0))
        .unwrap();
    // One batch is 2 s of samples; allow one sample interval more.
    assert!(
        killed_at - newest <= 4,
        "lost {} s of samples",
        killed_at - newest
    );
    let minutes: i64 = conn
        .query_row("SELECT count(*) FROM metric_1m", [], |r| r.get(0))
        .unwrap();
    assert!(minutes > 0, "rollups were written with the raw samples");
}

#[test]
fn bytes_written_to_the_sd_card_are_reported_per_day() {
    let board = Board::copy();
    let (d, session) = start(&board, 1);
    let card = || d.get("metrics/card-writes?days=7", Some(&session)).body;
    assert_eq!(card()["disk"], "mmcblk0", "the card holds the root");
    // Let the sampler see the counters once, then the card writes 10 MiB
    // (20480 sectors more in diskstats' sectors-written field).
    std::thread::sleep(Duration::from_secs(3));
    let stats = std::fs::read_to_string(board.root().join("proc/diskstats")).unwrap();
    let bumped: String = stats
        .lines()
        .map(|line| {
            let mut fields: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
            if fields[2] == "mmcblk0" {
                let written: u64 = fields[9].parse().unwrap();
                fields[9] = (written + 20_480).to_string();
            }
            format!("{}\n", fields.join(" "))
        })
        .collect();
    std::fs::write(board.root().join("proc/diskstats"), bumped).unwrap();
    let ten_mib = 10.0 * 1024.0 * 1024.0;
    wait_for("the card's 10 MiB in today's total", || {
        let total: u64 = card()["days"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["written_bytes"].as_u64().unwrap())
            .sum();
        (total as f64 - ten_mib).abs() < ten_mib * 0.05
    });
    let writes = card();
    assert!(writes["measured_secs"].as_u64().unwrap() >= 3, "{writes}");
    assert!(writes["mean_bytes_per_day"].as_u64().unwrap() > 10 << 20);

    let refused = d.get("metrics/card-writes?days=0", Some(&session));
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["field"], "days", "{:?}", refused.body);
}
