//! Tuning on temporary copies of the fixture trees of real boards (the
//! boards are not on this machine; see tests/fixtures/README.md): the CLI
//! and the API write into the copy, and every file is compared afterwards.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{Daemon, Immutable, fixture};
use serde_json::{Value, json};

const CPUFREQ: &str = "sys/devices/system/cpu/cpufreq";

/// A writable copy of a fixture tree, and a data directory for the store.
struct Board {
    dir: tempfile::TempDir,
}

impl Board {
    fn copy(name: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("cp")
            .arg("-a")
            .arg(fixture(name))
            .arg(dir.path().join("root"))
            .status()
            .unwrap();
        assert!(status.success());
        let config = format!("data_dir = \"{}\"\n", dir.path().join("data").display());
        std::fs::write(dir.path().join("nasd.toml"), config).unwrap();
        Board { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn nasd(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_nasd"))
            .arg("--config")
            .arg(self.dir.path().join("nasd.toml"))
            .arg("--root")
            .arg(self.root())
            .args(args)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.nasd(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.nasd(args);
        assert!(!out.status.success(), "{args:?} should fail");
        String::from_utf8(out.stderr).unwrap()
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root().join(path))
            .unwrap()
            .trim()
            .to_owned()
    }

    fn write(&self, path: &str, value: &str) {
        std::fs::write(self.root().join(path), value).unwrap();
    }

    /// Every file of the tree and its value (trimmed: sysfs attributes read
    /// back with a newline whether or not one was written).
    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    walk(&path, out);
                } else if kind.is_file() {
                    let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap())
                        .trim()
                        .to_owned();
                    out.insert(path.clone(), text);
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.root(), &mut out);
        out
    }
}

/// Fails with the paths whose values differ.
fn assert_unchanged(before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) {
    let changed: Vec<String> = after
        .iter()
        .filter(|(path, value)| before.get(*path) != Some(value))
        .map(|(path, value)| format!("{}: {:?} -> {value:?}", path.display(), before.get(path)))
        .collect();
    assert!(changed.is_empty(), "changed:\n{}", changed.join("\n"));
}

#[test]
fn xu4_gets_io_tuned_on_both_policies_and_it_reads_back() {
    let b = Board::copy("odroid-xu4");
    let out = b.ok(&["tune", "apply", "io-tuned"]);
    assert!(
        out.contains("policy4 ondemand/up_threshold: 95 -> 80"),
        "{out}"
    );
    for policy in ["policy0", "policy4"] {
        assert_eq!(
            b.read(&format!("{CPUFREQ}/{policy}/scaling_governor")),
            "ondemand"
        );
        assert_eq!(
            b.read(&format!("{CPUFREQ}/{policy}/ondemand/io_is_busy")),
            "1"
        );
        assert_eq!(
            b.read(&format!("{CPUFREQ}/{policy}/ondemand/sampling_down_factor")),
            "10"
        );
        assert_eq!(
            b.read(&format!("{CPUFREQ}/{policy}/ondemand/up_threshold")),
            "80"
        );
    }
    // USB carries both the disks and Ethernet on the XU4: the big cores
    // take their interrupts.
    assert_eq!(b.read("proc/irq/67/smp_affinity_list"), "4-7");
    assert_eq!(b.read("proc/irq/68/smp_affinity_list"), "4-7");
    assert_eq!(
        b.read("proc/irq/29/smp_affinity_list"),
        "0-7",
        "the timer is left alone"
    );

    let again = b.ok(&["tune", "apply", "io-tuned"]);
    assert_eq!(again.trim(), "nothing changed: already applied");

    let state: Value = serde_json::from_str(&b.ok(&["tune", "show", "--json"])).unwrap();
    let clusters = state["clusters"].as_array().unwrap();
    assert_eq!(clusters[1]["policy"], "policy4");
    assert_eq!(clusters[1]["governor"], "ondemand");
    assert_eq!(clusters[1]["tunables"]["up_threshold"], "80");
    assert_eq!(clusters[1]["tunables_scope"], "policy");
    assert!(clusters[0]["time_in_state"].as_array().unwrap().len() == 13);
    assert_eq!(state["desired"]["preset"], "io-tuned");

    let sysfs = b.ok(&["tune", "export-sysfs"]);
    assert!(sysfs.contains("devices/system/cpu/cpufreq/policy4/scaling_governor = ondemand\n"));
    assert!(sysfs.contains("devices/system/cpu/cpufreq/policy4/ondemand/up_threshold = 80\n"));
    let governor_line = sysfs.find("policy4/scaling_governor").unwrap();
    let tunable_line = sysfs.find("policy4/ondemand/io_is_busy").unwrap();
    assert!(
        governor_line < tunable_line,
        "the governor comes before its tunables"
    );
}

#[test]
fn hc4_tunables_live_in_the_global_directory() {
    let b = Board::copy("odroid-hc4");
    assert_eq!(
        b.read(&format!("{CPUFREQ}/policy0/scaling_governor")),
        "schedutil"
    );
    let before = b.snapshot();
    b.ok(&["tune", "apply", "io-tuned"]);
    assert_eq!(
        b.read(&format!("{CPUFREQ}/policy0/scaling_governor")),
        "ondemand"
    );
    assert_eq!(b.read(&format!("{CPUFREQ}/ondemand/up_threshold")), "80");
    assert_eq!(b.read(&format!("{CPUFREQ}/ondemand/io_is_busy")), "1");
    // One cluster: no big cores to move interrupts to.
    let after = b.snapshot();
    let irqs_changed = after
        .iter()
        .filter(|(p, v)| p.to_string_lossy().contains("/proc/irq/") && before.get(*p) != Some(v))
        .count();
    assert_eq!(irqs_changed, 0);
    let state: Value = serde_json::from_str(&b.ok(&["tune", "show", "--json"])).unwrap();
    assert_eq!(state["clusters"][0]["tunables_scope"], "global");
}

#[test]
fn a_cluster_can_be_tuned_alone() {
    let b = Board::copy("odroid-xu4");
    b.ok(&["tune", "apply", "performance", "--cluster", "policy4"]);
    assert_eq!(
        b.read(&format!("{CPUFREQ}/policy4/scaling_governor")),
        "performance"
    );
    assert_eq!(
        b.read(&format!("{CPUFREQ}/policy0/scaling_governor")),
        "ondemand"
    );
    b.ok(&["tune", "set", "policy0", "max_khz=1200000"]);
    assert_eq!(
        b.read(&format!("{CPUFREQ}/policy0/scaling_max_freq")),
        "1200000"
    );
}

#[test]
fn bare_vm_says_there_is_no_cpufreq() {
    let b = Board::copy("bare-vm");
    let shown = b.ok(&["tune", "show"]);
    assert!(shown.contains("cpufreq: none"), "{shown}");
    let err = b.fails(&["tune", "apply", "io-tuned"]);
    assert!(err.contains("no CPU frequency scaling"), "{err}");
}

#[test]
fn out_of_range_and_unknown_values_are_refused_with_nothing_written() {
    let b = Board::copy("odroid-xu4");
    let before = b.snapshot();
    let cases: [(&[&str], &str); 7] = [
        (
            &["tune", "set", "policy4", "up_threshold=0"],
            "tunables.up_threshold: must be 1 to 100",
        ),
        (
            &["tune", "set", "policy4", "io_is_busy=2"],
            "tunables.io_is_busy: must be 0 to 1",
        ),
        (
            &["tune", "set", "policy4", "bogus_knob=1"],
            "'bogus_knob' is not a tunable of the ondemand governor",
        ),
        (
            &["tune", "set", "policy4", "governor=turbo"],
            "governor: policy4 has no turbo governor",
        ),
        (
            &["tune", "set", "policy4", "max_khz=3000000"],
            "max_khz: must be within policy4's 200000 to 2000000 kHz",
        ),
        (
            &["tune", "set", "policy9", "up_threshold=50"],
            "cluster: no policy 'policy9'",
        ),
        (
            &["tune", "apply", "turbo"],
            "preset: 'turbo' is not a preset",
        ),
    ];
    for (args, expected) in cases {
        let err = b.fails(args);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
    let err = b.fails(&["tune", "set", "sda", "scheduler=cfq"]);
    assert!(
        err.contains("scheduler: sda offers mq-deadline, kyber, bfq, none"),
        "{err}"
    );
    assert_unchanged(&before, &b.snapshot());
    assert!(b.ok(&["tune", "show"]).contains("kept applied: nothing"));
}

#[test]
fn a_tunable_that_cannot_be_written_leaves_every_value_as_it_was() {
    let b = Board::copy("odroid-xu4");
    let before = b.snapshot();
    let locked = Immutable::new(
        b.root()
            .join(format!("{CPUFREQ}/policy4/ondemand/up_threshold")),
    );
    let err = b.fails(&["tune", "apply", "io-tuned"]);
    drop(locked);
    assert!(err.contains("every value was restored"), "{err}");
    assert_eq!(
        b.snapshot(),
        before,
        "policy0's values were written back too"
    );
    assert!(
        b.ok(&["tune", "show"]).contains("kept applied: nothing"),
        "not recorded as kept"
    );
}

#[test]
fn a_zone_near_its_trip_point_warns_before_running_faster() {
    let b = Board::copy("odroid-xu4");
    b.write("sys/devices/virtual/thermal/thermal_zone1/temp", "82000\n");
    let before = b.snapshot();
    let err = b.fails(&["tune", "apply", "performance"]);
    assert!(
        err.contains("thermal_zone1 (cpu1-thermal) is at 82.0 °C, within 5 °C"),
        "{err}"
    );
    assert_unchanged(&before, &b.snapshot());
    assert!(b.ok(&["tune", "show"]).contains("WARNING: thermal_zone1"));
    b.ok(&["tune", "apply", "performance", "--accept-thermal-risk"]);
    assert_eq!(
        b.read(&format!("{CPUFREQ}/policy4/scaling_governor")),
        "performance"
    );
    // Slower is always allowed.
    b.ok(&["tune", "apply", "powersave"]);
}

#[test]
fn drift_is_put_back_within_one_interval_and_logged() {
    let b = Board::copy("odroid-xu4");
    let d = Daemon::start_with(&b.root(), "drift_check_secs = 1\n", &[]);
    let session = d.set_up();
    let bad = d.send(
        "PUT",
        "tuning",
        json!({"preset": "io-tuned", "tunables": {"up_threshold": 500}}),
        &session,
    );
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["field"], "tunables.up_threshold");
    let unknown = d.send(
        "PUT",
        "tuning",
        json!({"preset": "io-tuned", "turbo": true}),
        &session,
    );
    assert_eq!(unknown.status, 400, "{:?}", unknown.body);
    assert!(unknown.body["error"].as_str().unwrap().contains("turbo"));

    let applied = d.send("PUT", "tuning", json!({"preset": "io-tuned"}), &session);
    assert_eq!(applied.status, 200, "{:?}", applied.body);
    assert_eq!(applied.body["changed"], true);
    let state = d.get("tuning", Some(&session)).body;
    assert_eq!(state["clusters"][0]["governor"], "ondemand");
    assert_eq!(state["clusters"][0]["tunables"]["io_is_busy"], "1");

    // Something else (another init script) changes the tuning.
    b.write(
        &format!("{CPUFREQ}/policy4/scaling_governor"),
        "conservative\n",
    );
    b.write(&format!("{CPUFREQ}/policy0/ondemand/up_threshold"), "95\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    while b.read(&format!("{CPUFREQ}/policy4/scaling_governor")) != "ondemand"
        || b.read(&format!("{CPUFREQ}/policy0/ondemand/up_threshold")) != "80"
    {
        assert!(Instant::now() < deadline, "drift not put back");
        std::thread::sleep(Duration::from_millis(100));
    }
    let events = d.get("tuning/events", Some(&session)).body;
    let drift = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["message"].as_str().unwrap().starts_with("drift"))
        .expect("a drift event");
    assert!(
        drift["message"]
            .as_str()
            .unwrap()
            .contains("policy4 governor: conservative -> ondemand"),
        "{drift}"
    );
}

#[test]
fn disk_queues_take_read_ahead_and_a_scheduler() {
    let b = Board::copy("odroid-xu4");
    b.ok(&["tune", "set", "sda", "read_ahead_kb=1024", "scheduler=bfq"]);
    assert_eq!(b.read("sys/block/sda/queue/read_ahead_kb"), "1024");
    assert_eq!(b.read("sys/block/sda/queue/scheduler"), "bfq");
    let state: Value = serde_json::from_str(&b.ok(&["tune", "show", "--json"])).unwrap();
    assert_eq!(state["desired"]["disks"]["sda"]["read_ahead_kb"], 1024);
    let err = b.fails(&["tune", "set", "sda", "read_ahead_kb=2"]);
    assert!(err.contains("read_ahead_kb: must be 4 to 65536"), "{err}");
    let sysfs = b.ok(&["tune", "export-sysfs"]);
    assert!(
        sysfs.contains("block/sda/queue/read_ahead_kb = 1024"),
        "{sysfs}"
    );
}

#[test]
fn a_tuned_disk_that_is_unplugged_does_not_block_the_rest() {
    let b = Board::copy("odroid-xu4");
    b.ok(&["tune", "set", "sda", "read_ahead_kb=1024"]);
    std::fs::remove_file(b.root().join("sys/block/sda")).unwrap();
    b.ok(&["tune", "apply", "io-tuned"]);
    assert_eq!(
        b.read(&format!("{CPUFREQ}/policy4/ondemand/up_threshold")),
        "80"
    );
    let state: Value = serde_json::from_str(&b.ok(&["tune", "show", "--json"])).unwrap();
    assert_eq!(
        state["desired"]["disks"]["sda"]["read_ahead_kb"], 1024,
        "kept for when it comes back"
    );
}
