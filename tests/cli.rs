//! `nasd status` against fixture trees of real board layouts (the boards
//! themselves are not on this machine; see tests/fixtures/README.md), and
//! the command line's handling of bad configuration.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

fn nasd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nasd"))
        .args(args)
        // No config: the defaults, whatever this machine has in /etc.
        .args(["--config", "/dev/null"])
        .output()
        .expect("nasd runs")
}

fn status_json(tree: &str) -> Value {
    let root = fixture(tree);
    let out = nasd(&["--root", root.to_str().unwrap(), "status", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("status --json prints JSON")
}

fn clusters(info: &Value) -> &Vec<Value> {
    info["cpu"]["clusters"]
        .as_array()
        .expect("cpu.clusters is a list")
}

#[test]
fn xu4_shows_two_clusters_with_cpus_governors_and_ranges() {
    let info = status_json("odroid-xu4");
    assert_eq!(info["board"]["model"], "Hardkernel Odroid XU4");
    assert_eq!(info["arch"], "armv7l");
    let c = clusters(&info);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0]["policy"], "policy0");
    assert_eq!(c[0]["cpus"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(c[0]["governor"], "ondemand");
    assert_eq!(c[0]["max_khz"], 1_400_000);
    assert_eq!(c[1]["policy"], "policy4");
    assert_eq!(c[1]["cpus"], serde_json::json!([4, 5, 6, 7]));
    assert_eq!(c[1]["max_khz"], 2_000_000);
    assert_eq!(c[1]["min_khz"], 200_000);
    let thermal = info["thermal"].as_array().unwrap();
    assert_eq!(thermal[0]["zone"], "thermal_zone0");
    assert_eq!(thermal[0]["type"], "cpu0-thermal");
    assert_eq!(thermal[0]["celsius"], 52.0);
}

#[test]
fn hc4_shows_one_cluster() {
    let info = status_json("odroid-hc4");
    assert_eq!(info["board"]["model"], "Hardkernel ODROID-HC4");
    let c = clusters(&info);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["cpus"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(c[0]["governor"], "schedutil");
    assert_eq!(c[0]["max_khz"], 1_908_000);
}

#[test]
fn bare_vm_shows_no_clusters_and_exits_zero() {
    let info = status_json("bare-vm");
    assert!(clusters(&info).is_empty());
    assert_eq!(info["thermal"], serde_json::json!([]));
    assert_eq!(info["board"]["model"], "Standard PC (Q35 + ICH9, 2009)");
}

#[test]
fn text_status_names_the_board_and_clusters() {
    let root = fixture("odroid-xu4");
    let out = nasd(&["--root", root.to_str().unwrap(), "status"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("board:    Hardkernel Odroid XU4"), "{text}");
    assert!(
        text.contains("policy4 cpus 4,5,6,7 Cortex-A15 governor ondemand 200-2000 MHz"),
        "{text}"
    );
}

#[test]
fn this_machine_status_works() {
    // The real /sys and /proc of whatever runs the tests.
    let out = nasd(&["status", "--json"]);
    assert!(out.status.success());
    let info: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(info["memory"]["total_bytes"].as_u64().unwrap() > 0);
    assert_eq!(info["arch"], std::env::consts::ARCH);
}

#[test]
fn a_missing_root_is_a_clear_error() {
    let out = nasd(&["--root", "/nonexistent/board", "status"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("root /nonexistent/board is not a directory"),
        "{err}"
    );
}

fn with_config(text: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nasd.toml");
    std::fs::write(&path, text).unwrap();
    Command::new(env!("CARGO_BIN_EXE_nasd"))
        .arg("--config")
        .arg(&path)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn an_unknown_config_key_stops_the_daemon_naming_it() {
    let out = with_config("listen_port = 80\n", &["serve"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("listen_port"), "{err}");
}

#[test]
fn a_bad_config_value_names_the_field_and_rule() {
    let out = with_config("sample_interval_secs = 0\n", &["status"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sample_interval_secs: must be 1 to 3600"),
        "{err}"
    );
}

#[test]
fn a_bad_listen_flag_names_the_flag() {
    let out = with_config("", &["serve", "--listen", "everywhere"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--listen: 'everywhere' is not an address"),
        "{err}"
    );
}

fn disks_json(tree: &str) -> Value {
    let root = fixture(tree);
    let out = nasd(&["--root", root.to_str().unwrap(), "disks", "list", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn disk<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["disks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("{name} listed"))
}

#[test]
fn xu4_usb_disks_show_link_speed_and_the_usb2_fallback() {
    let list = disks_json("odroid-xu4");
    let sda = disk(&list, "sda");
    assert_eq!(sda["transport"], "usb");
    assert_eq!(sda["usb_speed_mbps"], 5000);
    assert_eq!(sda["usb_degraded"], false);
    assert_eq!(sda["size_bytes"], 3_907_029_168u64 * 512);
    assert_eq!(sda["serial"], "WD-WX12A3456789");
    assert_eq!(sda["fs"]["type"], "ntfs");
    let sdb = disk(&list, "sdb");
    assert_eq!(sdb["usb_speed_mbps"], 480);
    assert_eq!(sdb["usb_degraded"], true, "a USB 3 bridge at USB 2 speed");
    assert_eq!(sdb["partitions"][0]["mountpoint"], "/srv/backup");
    assert_eq!(sdb["partitions"][0]["fs"]["label"], "backup");
    let sd_card = disk(&list, "mmcblk0");
    assert_eq!(sd_card["system"], true);
    assert_eq!(sd_card["transport"], "mmc");
    assert_eq!(sda["system"], false);

    let root = fixture("odroid-xu4");
    let text = nasd(&["--root", root.to_str().unwrap(), "disks", "list"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("480 Mbit/s, USB 3 DISK AT USB 2 SPEED"),
        "{text}"
    );
}

#[test]
fn hc4_shows_two_sata_disks() {
    let list = disks_json("odroid-hc4");
    let sata: Vec<&Value> = list["disks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["transport"] == "sata")
        .collect();
    assert_eq!(sata.len(), 2);
    assert_eq!(sata[0]["serial"], "ZDH1A1B2");
    assert_eq!(sata[1]["wwn"], "0x5000c500c1d4e5f6");
    assert_eq!(sata[1]["partitions"][0]["fs"]["type"], "xfs");
    assert!(
        sata.iter()
            .all(|d| d["usb_speed_mbps"].is_null() && d["rotational"] == true)
    );
    assert_eq!(disk(&list, "mmcblk0")["system"], true);
}

#[test]
fn bare_vm_system_disk_is_marked() {
    let list = disks_json("bare-vm");
    assert_eq!(disk(&list, "vda")["system"], true);
    assert_eq!(disk(&list, "vda")["transport"], "virtio");
}
