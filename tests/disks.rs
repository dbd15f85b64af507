//! Disks with real components: loop devices on sparse files, real mkfs,
//! mount(8), ntfs-3g over FUSE, and the daemon's API. Needs root (CI runs as
//! root). /etc is a temporary directory (`--etc-dir`) so the machine's own
//! fstab is never touched, while /dev, /proc and /sys are the real ones.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Daemon, Immutable, Reply, fixture};
use serde_json::{Value, json};

const HAND_WRITTEN_FSTAB: &str = "# /etc/fstab: written by hand\n\
    UUID=1111-2222  /boot  vfat  defaults  0  2\n\
    \t# a comment with odd   spacing\n\
    /dev/vda / ext4 errors=remount-ro 0 1\n";

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().expect(program);
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A loop device on a sparse file; detached (and unmounted) when dropped.
struct Loop {
    name: String,
    file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Loop {
    fn new(size_mib: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("disk.img");
        std::fs::File::create(&file)
            .unwrap()
            .set_len(size_mib << 20)
            .unwrap();
        let device = run("losetup", &["--find", "--show", file.to_str().unwrap()]);
        Loop {
            name: device.trim_start_matches("/dev/").to_owned(),
            file,
            _dir: dir,
        }
    }

    fn dev(&self) -> String {
        format!("/dev/{}", self.name)
    }

    fn backing(&self) -> &str {
        self.file.to_str().unwrap()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        // Only loops still attached to this test's file: a test may have
        // detached its own already, and the kernel reuses the name at once
        // for another test's loop, which must not be touched.
        let attached = Command::new("losetup")
            .args(["-j", self.backing()])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for dev in attached.lines().filter_map(|l| l.split(':').next()) {
            for line in std::fs::read_to_string("/proc/self/mountinfo")
                .unwrap_or_default()
                .lines()
            {
                if line.contains(&format!(" {dev} ")) {
                    let mountpoint = line.split(' ').nth(4).unwrap_or_default();
                    let _ = Command::new("umount").args(["-l", mountpoint]).status();
                }
            }
            let _ = Command::new("losetup").args(["-d", dev]).status();
        }
    }
}

/// A daemon on the real machine with /etc and the mount base in temporary
/// directories, logged in.
struct Rig {
    daemon: Daemon,
    session: String,
    etc: tempfile::TempDir,
    mounts: tempfile::TempDir,
}

impl Rig {
    fn new() -> Self {
        let etc = tempfile::tempdir().unwrap();
        std::fs::write(etc.path().join("fstab"), HAND_WRITTEN_FSTAB).unwrap();
        let mounts = tempfile::tempdir().unwrap();
        let config = format!("mount_base = \"{}\"\n", mounts.path().display());
        let etc_flag = etc.path().to_str().unwrap().to_owned();
        let daemon = Daemon::start_with(Path::new("/"), &config, &["--etc-dir", &etc_flag]);
        let session = daemon.set_up();
        Rig {
            daemon,
            session,
            etc,
            mounts,
        }
    }

    fn fstab(&self) -> String {
        std::fs::read_to_string(self.etc.path().join("fstab")).unwrap()
    }

    fn post(&self, path: &str, body: Value) -> Reply {
        self.daemon.send("POST", path, body, &self.session)
    }

    fn get(&self, path: &str) -> Reply {
        self.daemon.get(path, Some(&self.session))
    }

    fn disk(&self, name: &str) -> Value {
        let reply = self.get(&format!("disks/{name}"));
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        reply.body
    }

    fn format(&self, lo: &Loop, fs: &str, label: &str) -> Value {
        let reply = self.post(
            &format!("disks/{}/format", lo.name),
            json!({"fs": fs, "label": label}),
        );
        assert_eq!(reply.status, 200, "format {fs}: {:?}", reply.body);
        reply.body
    }
}

fn mount_line(mountpoint: &str) -> Option<String> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .find(|l| l.split(' ').nth(1) == Some(mountpoint))
        .map(str::to_owned)
}

fn mount_unmount_cycle(fs: &str, label: &str, mount_type: &str, kernel_type: &str) {
    let rig = Rig::new();
    let lo = Loop::new(320);
    let formatted = rig.format(&lo, fs, label);
    assert_eq!(formatted["fs"]["type"], fs);
    assert_eq!(formatted["fs"]["label"], label);
    let uuid = formatted["fs"]["uuid"].as_str().unwrap().to_owned();

    let mounted = rig.post(&format!("disks/{}/mount", lo.name), json!({}));
    assert_eq!(mounted.status, 200, "{:?}", mounted.body);
    assert_eq!(mounted.body["changed"], true);
    let mountpoint = mounted.body["mountpoint"].as_str().unwrap().to_owned();
    assert_eq!(
        mountpoint,
        format!("{}/{label}", rig.mounts.path().display())
    );

    let line = mount_line(&mountpoint).expect("in /proc/mounts");
    assert!(line.contains(&format!(" {kernel_type} ")), "{line}");
    assert!(line.contains("noatime"), "{line}");

    let fstab = rig.fstab();
    assert!(
        fstab.starts_with(HAND_WRITTEN_FSTAB),
        "hand-written lines kept byte for byte"
    );
    let pass = if fs == "ext4" { 2 } else { 0 };
    let big_writes = if mount_type == "ntfs-3g" {
        "big_writes,"
    } else {
        ""
    };
    let expected = format!(
        "UUID={uuid} {mountpoint} {mount_type} noatime,{big_writes}nofail,x-systemd.device-timeout=30s 0 {pass}\n"
    );
    assert!(fstab.contains(&expected), "{fstab}\nlacks\n{expected}");

    let disk = rig.disk(&lo.name);
    assert_eq!(disk["mountpoint"], mountpoint.as_str());
    assert!(disk["usage"]["total_bytes"].as_u64().unwrap() > 100 << 20);

    let again = rig.post(&format!("disks/{}/mount", lo.name), json!({}));
    assert_eq!(again.status, 200);
    assert_eq!(again.body["changed"], false, "a second mount is a no-op");
    assert_eq!(rig.fstab(), fstab);

    std::fs::write(Path::new(&mountpoint).join("hello.txt"), "kept").unwrap();
    let unmounted = rig.post(&format!("disks/{}/unmount", lo.name), json!({}));
    assert_eq!(unmounted.status, 200, "{:?}", unmounted.body);
    assert_eq!(unmounted.body["changed"], true);
    assert!(mount_line(&mountpoint).is_none());
    assert!(
        !Path::new(&mountpoint).exists(),
        "the empty mount point is removed"
    );
    assert_eq!(rig.fstab(), HAND_WRITTEN_FSTAB, "fstab is as it was");
    let twice = rig.post(&format!("disks/{}/unmount", lo.name), json!({}));
    assert_eq!(twice.body["changed"], false);
}

#[test]
fn ext4_mounts_with_nasd_options_and_fstab_by_uuid() {
    mount_unmount_cycle("ext4", "media", "ext4", "ext4");
}

#[test]
fn xfs_mounts_with_nasd_options() {
    mount_unmount_cycle("xfs", "photos", "xfs", "xfs");
}

#[test]
fn btrfs_mounts_with_nasd_options() {
    mount_unmount_cycle("btrfs", "backup", "btrfs", "btrfs");
}

#[test]
fn ntfs_mounts_through_ntfs_3g_with_big_writes() {
    // ntfs-3g runs over FUSE, so /proc/mounts shows fuseblk.
    mount_unmount_cycle("ntfs", "windows", "ntfs-3g", "fuseblk");
}

#[test]
fn a_disk_with_data_is_not_formatted_without_its_confirmation() {
    let rig = Rig::new();
    let lo = Loop::new(64);
    run("mkfs.ext4", &["-q", "-L", "precious", &lo.dev()]);
    let scratch = tempfile::tempdir().unwrap();
    let at = scratch.path().to_str().unwrap();
    run("mount", &[&lo.dev(), at]);
    std::fs::write(scratch.path().join("thesis.txt"), "years of work").unwrap();
    run("umount", &[at]);

    let path = format!("disks/{}/format", lo.name);
    let refused = rig.post(&path, json!({"fs": "xfs", "label": "new"}));
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    assert_eq!(refused.body["field"], "confirm");
    assert!(
        refused.body["error"]
            .as_str()
            .unwrap()
            .contains("ext4 filesystem")
    );
    let wrong = rig.post(
        &path,
        json!({"fs": "ext4", "label": "new", "confirm": "/tmp/other.img"}),
    );
    assert_eq!(wrong.status, 409);
    assert_eq!(
        wrong.body["field"], "confirm",
        "refused for the confirmation"
    );

    run("mount", &["-o", "ro", &lo.dev(), at]);
    assert_eq!(
        std::fs::read_to_string(scratch.path().join("thesis.txt")).unwrap(),
        "years of work"
    );
    let while_mounted = rig.post(
        &path,
        json!({"fs": "ext4", "label": "new", "confirm": lo.backing()}),
    );
    assert_eq!(while_mounted.status, 409, "{:?}", while_mounted.body);
    assert!(
        while_mounted.body["error"]
            .as_str()
            .unwrap()
            .contains("unmount it first")
    );
    run("umount", &[at]);
    assert_eq!(
        rig.disk(&lo.name)["fs"]["label"],
        "precious",
        "nothing was erased"
    );

    let confirmed = rig.post(
        &path,
        json!({"fs": "ext4", "label": "new", "confirm": lo.backing()}),
    );
    assert_eq!(confirmed.status, 200, "{:?}", confirmed.body);
    assert_eq!(confirmed.body["fs"]["label"], "new");
}

#[test]
fn bad_labels_and_options_are_refused_and_fstab_is_untouched() {
    let rig = Rig::new();
    let lo = Loop::new(64);
    rig.format(&lo, "ext4", "safe");
    let before = rig.fstab();
    let format = format!("disks/{}/format", lo.name);
    for label in [
        "a\nb",
        "a,b",
        "$(reboot)",
        "a;rm -rf",
        "../etc",
        "has space",
    ] {
        let reply = rig.post(
            &format,
            json!({"fs": "ext4", "label": label, "confirm": lo.backing()}),
        );
        assert_eq!(reply.status, 400, "{label:?}: {:?}", reply.body);
        assert_eq!(reply.body["field"], "label");
    }
    let mount = format!("disks/{}/mount", lo.name);
    for option in [
        "noatime\nUUID=x / ext4 defaults 0 0",
        "exec,suid",
        "defaults,user",
        "commit=5;reboot",
        "commit=$(reboot)",
        "x-systemd.requires=evil.service",
        "data=journal` `",
    ] {
        let reply = rig.post(&mount, json!({"options": [option]}));
        assert_eq!(reply.status, 400, "{option:?}: {:?}", reply.body);
        assert_eq!(reply.body["field"], "options");
        assert!(
            reply.body["error"].as_str().unwrap().contains(option),
            "names the option"
        );
    }
    assert_eq!(rig.fstab(), before, "byte-identical");
    assert_eq!(rig.disk(&lo.name)["mountpoint"], Value::Null);
    assert_eq!(rig.disk(&lo.name)["fs"]["label"], "safe");
}

#[test]
fn preview_shows_options_with_reasons_and_changes_nothing() {
    let rig = Rig::new();
    let lo = Loop::new(64);
    rig.format(&lo, "ext4", "preview");
    let reply = rig.post(
        &format!("disks/{}/mount/preview", lo.name),
        json!({"options": ["discard"]}),
    );
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let options = reply.body["plan"]["options"].as_array().unwrap();
    let names: Vec<&str> = options
        .iter()
        .map(|o| o["option"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "noatime",
            "nofail",
            "x-systemd.device-timeout=30s",
            "discard"
        ]
    );
    assert!(
        options
            .iter()
            .all(|o| !o["reason"].as_str().unwrap().is_empty())
    );
    assert_eq!(rig.disk(&lo.name)["mountpoint"], Value::Null);
    assert_eq!(rig.fstab(), HAND_WRITTEN_FSTAB);
}

#[test]
fn a_busy_filesystem_is_not_unmounted_unless_forced() {
    let rig = Rig::new();
    let lo = Loop::new(64);
    rig.format(&lo, "ext4", "busy");
    let mounted = rig.post(&format!("disks/{}/mount", lo.name), json!({}));
    let mountpoint = mounted.body["mountpoint"].as_str().unwrap().to_owned();
    let mut holder = Command::new("sleep")
        .arg("60")
        .current_dir(&mountpoint)
        .spawn()
        .unwrap();

    let refused = rig.post(&format!("disks/{}/unmount", lo.name), json!({}));
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    let message = refused.body["error"].as_str().unwrap();
    assert!(
        message.contains(&format!("sleep (pid {})", holder.id())),
        "{message}"
    );
    assert!(mount_line(&mountpoint).is_some());

    let forced = rig.post(
        &format!("disks/{}/unmount", lo.name),
        json!({"force": true}),
    );
    assert_eq!(forced.status, 200, "{:?}", forced.body);
    assert!(mount_line(&mountpoint).is_none());
    assert_eq!(rig.fstab(), HAND_WRITTEN_FSTAB);
    holder.kill().unwrap();
    holder.wait().unwrap();
}

#[test]
fn a_vanished_disk_is_reported_missing_and_the_api_keeps_answering() {
    let rig = Rig::new();
    let lo = Loop::new(64);
    let uuid = rig.format(&lo, "ext4", "gone")["fs"]["uuid"]
        .as_str()
        .unwrap()
        .to_owned();
    let mounted = rig.post(&format!("disks/{}/mount", lo.name), json!({}));
    let mountpoint = mounted.body["mountpoint"].as_str().unwrap().to_owned();

    // Detaching a mounted loop only schedules it (the kernel waits for the
    // unmount), so finish the job the way a yanked USB disk leaves things:
    // the device is gone and nasd was not asked.
    run("losetup", &["-d", &lo.dev()]);
    run("umount", &["-l", &mountpoint]);
    let deadline = Instant::now() + Duration::from_secs(5);
    let list = loop {
        let reply = rig.get("disks");
        assert_eq!(reply.status, 200);
        let missing = reply.body["missing_mounts"].as_array().unwrap().clone();
        if missing.iter().any(|m| m["uuid"] == uuid.as_str()) {
            break reply.body;
        }
        assert!(Instant::now() < deadline, "not reported missing within 5 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        list["disks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["name"] != lo.name.as_str())
    );

    // The user can forget a mount whose disk is gone, by its UUID.
    let forget = rig.post(&format!("disks/{uuid}/unmount"), json!({}));
    assert_eq!(forget.status, 200, "{:?}", forget.body);
    assert_eq!(rig.fstab(), HAND_WRITTEN_FSTAB);
}

#[test]
fn a_disk_plugged_in_after_start_is_seen_within_five_seconds() {
    let rig = Rig::new();
    let started = Instant::now();
    let lo = Loop::new(32);
    loop {
        let names: Vec<String> = rig.get("disks").body["disks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_owned())
            .collect();
        if names.contains(&lo.name) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{} not seen",
            lo.name
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(rig.disk(&lo.name)["transport"], "loop");
    assert_eq!(rig.disk(&lo.name)["backing_file"], lo.backing());
}

#[test]
fn loops_have_no_smart_and_no_spindown() {
    let rig = Rig::new();
    let lo = Loop::new(32);
    let smart = rig.get(&format!("disks/{}/smart", lo.name));
    assert_eq!(smart.status, 200);
    assert_eq!(smart.body["state"], "unsupported");
    let power = rig.daemon.send(
        "PUT",
        &format!("disks/{}/power", lo.name),
        json!({"spindown_minutes": 20}),
        &rig.session,
    );
    assert_eq!(power.status, 422, "{:?}", power.body);
    let bad = rig.daemon.send(
        "PUT",
        &format!("disks/{}/power", lo.name),
        json!({"spindown_minutes": 25}),
        &rig.session,
    );
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["field"], "spindown_minutes");
}

#[test]
fn the_system_disk_is_never_formatted_or_mounted() {
    // On the XU4 fixture tree (the board is not here): its SD card holds /.
    let etc = tempfile::tempdir().unwrap();
    let etc_flag = etc.path().to_str().unwrap().to_owned();
    let d = Daemon::start_with(&fixture("odroid-xu4"), "", &["--etc-dir", &etc_flag]);
    let session = d.set_up();
    for name in ["mmcblk0", "mmcblk0p2"] {
        let format = d.send(
            "POST",
            &format!("disks/{name}/format"),
            json!({"fs": "ext4", "label": "x", "confirm": "0x9c3b1e2f"}),
            &session,
        );
        assert_eq!(format.status, 403, "{name}: {:?}", format.body);
        assert!(
            format.body["error"]
                .as_str()
                .unwrap()
                .contains("running system")
        );
    }
    let mount = d.send("POST", "disks/mmcblk0p1/mount", json!({}), &session);
    assert_eq!(mount.status, 403);
    let unknown = d.send("POST", "disks/sdz/mount", json!({}), &session);
    assert_eq!(unknown.status, 404);
    assert!(!etc.path().join("fstab").exists(), "nothing written");
}

#[test]
fn a_cloned_disk_and_an_occupied_mount_point_are_refused() {
    let rig = Rig::new();
    let original = Loop::new(64);
    rig.format(&original, "ext4", "twin");
    // A byte-for-byte clone carries the same filesystem UUID.
    let clone = Loop::new(64);
    run(
        "dd",
        &[
            &format!("if={}", original.dev()),
            &format!("of={}", clone.dev()),
            "bs=1M",
            "status=none",
        ],
    );
    let refused = rig.post(&format!("disks/{}/mount", clone.name), json!({}));
    assert_eq!(refused.status, 422, "{:?}", refused.body);
    assert!(
        refused.body["error"]
            .as_str()
            .unwrap()
            .contains("same filesystem UUID")
    );
    drop(clone);

    let occupied = rig.mounts.path().join("twin");
    std::fs::create_dir_all(&occupied).unwrap();
    std::fs::write(occupied.join("someone-elses.txt"), "here first").unwrap();
    let hidden = rig.post(&format!("disks/{}/mount", original.name), json!({}));
    assert_eq!(hidden.status, 422, "{:?}", hidden.body);
    assert!(hidden.body["error"].as_str().unwrap().contains("not empty"));
    assert_eq!(
        std::fs::read_to_string(occupied.join("someone-elses.txt")).unwrap(),
        "here first"
    );
    assert_eq!(rig.fstab(), HAND_WRITTEN_FSTAB);
}

#[test]
fn a_damaged_nasd_block_in_fstab_is_refused_not_guessed() {
    let rig = Rig::new();
    let lo = Loop::new(64);
    rig.format(&lo, "ext4", "damaged");
    let damaged = format!(
        "{HAND_WRITTEN_FSTAB}# BEGIN nasd data disks (generated from nasd's database; edits inside are replaced)\nUUID=x /srv/x ext4 defaults 0 0\n"
    );
    std::fs::write(rig.etc.path().join("fstab"), &damaged).unwrap();
    let reply = rig.post(&format!("disks/{}/mount", lo.name), json!({}));
    assert_eq!(reply.status, 400, "{:?}", reply.body);
    assert_eq!(reply.body["field"], "fstab");
    assert_eq!(rig.fstab(), damaged, "untouched");
    assert_eq!(
        rig.disk(&lo.name)["mountpoint"],
        Value::Null,
        "nothing mounted"
    );
}

#[test]
fn a_mount_that_cannot_be_recorded_in_fstab_is_undone() {
    let rig = Rig::new();
    let lo = Loop::new(64);
    rig.format(&lo, "ext4", "undone");
    let fstab = rig.etc.path().join("fstab");
    let frozen = Immutable::new(fstab.clone());
    let reply = rig.post(&format!("disks/{}/mount", lo.name), json!({}));
    drop(frozen);
    assert_eq!(reply.status, 500, "{:?}", reply.body);
    let mountpoint = format!("{}/undone", rig.mounts.path().display());
    assert!(mount_line(&mountpoint).is_none(), "the mount was undone");
    assert!(!Path::new(&mountpoint).exists());
    assert_eq!(rig.fstab(), HAND_WRITTEN_FSTAB);
    let list = rig.get("disks").body;
    assert_eq!(
        list["missing_mounts"],
        json!([]),
        "nothing recorded in the store"
    );
}
