//! The collectd plugin (crate `nasd-collectd`, built by `make test` before
//! this runs) loaded into Debian's collectd 5.12, reading the XU4 fixture
//! tree through its `Root` option (the board is not here); collectd's csv
//! writer must then hold the fixture's values.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// Stops collectd however the test ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn plugin() -> PathBuf {
    // target/debug/deps/collectd-<hash> -> target/debug/libnasd_collectd.so
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let so = dir.join("libnasd_collectd.so");
    assert!(
        so.exists(),
        "{} missing: build it with `cargo build -p nasd-collectd` (make test does)",
        so.display()
    );
    so
}

#[test]
fn collectd_reports_the_fixtures_frequencies_and_temperatures() {
    // collectd's csv writer refuses paths through a dot-directory, which is
    // how temporary directories are named by default.
    let dir = tempfile::Builder::new()
        .prefix("nasd-collectd-")
        .tempdir()
        .unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("plugins")).unwrap();
    // collectd loads only regular files from its plugin directory.
    std::fs::copy("/usr/lib/collectd/csv.so", d.join("plugins/csv.so")).unwrap();
    std::fs::copy(plugin(), d.join("plugins/nasd.so")).unwrap();
    let conf = format!(
        "Hostname \"nasdtest\"\nFQDNLookup false\nInterval 1\nBaseDir \"{0}\"\nPIDFile \"{0}/collectd.pid\"\n\
         PluginDir \"{0}/plugins\"\nTypesDB \"/usr/share/collectd/types.db\"\n\
         LoadPlugin csv\n<Plugin csv>\n  DataDir \"{0}/csv\"\n  StoreRates false\n</Plugin>\n\
         LoadPlugin nasd\n<Plugin nasd>\n  Root \"{1}\"\n</Plugin>\n",
        d.display(),
        common::fixture("odroid-xu4").display()
    );
    std::fs::write(d.join("collectd.conf"), conf).unwrap();
    let log = std::fs::File::create(d.join("collectd.log")).unwrap();
    let child = Command::new("collectd")
        .args(["-f", "-C"])
        .arg(d.join("collectd.conf"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("collectd (package collectd-core)");
    let _collectd = KillOnDrop(child);
    let csv = d.join("csv/nasdtest/nasd");
    let file = |prefix: &str| -> Option<String> {
        let entry = std::fs::read_dir(&csv)
            .ok()?
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with(prefix))?;
        std::fs::read_to_string(entry.path()).ok()
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    let (freq, temp) = loop {
        if let (Some(f), Some(t)) = (file("cpufreq-policy4-"), file("temperature-cpu0-thermal-"))
            && f.lines().count() > 1
            && t.lines().count() > 1
        {
            break (f, t);
        }
        assert!(
            Instant::now() < deadline,
            "collectd wrote no values: {}",
            std::fs::read_to_string(d.join("collectd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        freq.lines().nth(1).unwrap().ends_with(",1000000000.000000"),
        "{freq}"
    );
    assert!(
        temp.lines().nth(1).unwrap().ends_with(",52.000000"),
        "{temp}"
    );
    assert!(file("cpufreq-policy0-").is_some());
    assert!(file("temperature-gpu-thermal-").is_some());
}
