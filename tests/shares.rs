//! Shares with real components: the daemon renders smb.conf into a
//! temporary /etc (`--etc-dir`) and starts a real smbd on it; the only
//! settings the test adds (in the `nasd-site.conf` include) are the
//! loopback address, a free high port and private state directories. The
//! shared folders live on a loop-mounted ext4. Needs root: loop devices,
//! mount, and the no-login system users nasd creates (removed afterwards).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Daemon, Reply, free_port};
use serde_json::{Value, json};

fn run(program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program).args(args).output().expect(program)
}

/// A daemon with a private Samba, a mounted data disk, and cleanup of
/// everything it started or created, even when the test fails.
struct Nas {
    daemon: Daemon,
    session: String,
    dir: tempfile::TempDir,
    port: u16,
    loop_dev: String,
    users: Vec<String>,
}

impl Nas {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for sub in [
            "etc/samba",
            "state",
            "lock",
            "cache",
            "private",
            "pid",
            "data",
        ] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let port = free_port();
        let site = format!(
            "[global]\n   smb ports = {port}\n   interfaces = 127.0.0.1\n   bind interfaces only = yes\n\
             \x20  state directory = {0}/state\n   lock directory = {0}/lock\n   cache directory = {0}/cache\n\
             \x20  private dir = {0}/private\n   pid directory = {0}/pid\n   ncalrpc dir = {0}/state/ncalrpc\n",
            d.display()
        );
        std::fs::write(d.join("etc/samba/nasd-site.conf"), site).unwrap();
        let image = d.join("disk.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(256 << 20)
            .unwrap();
        let out = run("losetup", &["--find", "--show", image.to_str().unwrap()]);
        let loop_dev = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        assert!(run("mkfs.ext4", &["-q", &loop_dev]).status.success());
        std::fs::create_dir_all(d.join("data")).unwrap();
        assert!(
            run("mount", &[&loop_dev, d.join("data").to_str().unwrap()])
                .status
                .success()
        );
        let etc = d.join("etc");
        let daemon = Daemon::start_with(Path::new("/"), "", &["--etc-dir", etc.to_str().unwrap()]);
        let session = daemon.set_up();
        Nas {
            daemon,
            session,
            dir,
            port,
            loop_dev,
            users: Vec::new(),
        }
    }

    fn data(&self, sub: &str) -> String {
        self.dir.path().join("data").join(sub).display().to_string()
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("etc/samba/smb.conf")
    }

    fn smb_conf(&self) -> String {
        std::fs::read_to_string(self.conf()).unwrap_or_default()
    }

    fn post(&self, path: &str, body: Value) -> Reply {
        self.daemon.send("POST", path, body, &self.session)
    }

    fn add_share(&self, body: Value) -> Reply {
        self.post("shares", body)
    }

    /// A Samba user with a name unique to this run.
    fn add_user(&mut self, stem: &str, password: &str) -> String {
        let name = format!("nasdt{stem}{}", std::process::id() % 100_000);
        self.users.push(name.clone());
        let reply = self.post("users", json!({"username": name, "password": password}));
        assert_eq!(reply.status, 201, "{:?}", reply.body);
        name
    }

    fn smbclient(&self, args: &[&str]) -> std::process::Output {
        let port = self.port.to_string();
        let conf = self.conf();
        let mut all = vec!["-p", &port, "-s", conf.to_str().unwrap()];
        all.extend(args);
        run("smbclient", &all)
    }

    fn listed(&self) -> String {
        let out = self.smbclient(&["-N", "-L", "//127.0.0.1"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Nas {
    fn drop(&mut self) {
        let pids = self.dir.path().join("pid");
        for entry in std::fs::read_dir(&pids).into_iter().flatten().flatten() {
            if let Ok(pid) = std::fs::read_to_string(entry.path()) {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
        }
        let _ = Command::new("pkill")
            .args(["-f", &self.conf().display().to_string()])
            .status();
        for user in &self.users {
            // Already gone when the test removed it itself.
            let _ = Command::new("userdel")
                .arg(user)
                .stderr(std::process::Stdio::null())
                .status();
        }
        let _ = Command::new("umount").args(["-l", &self.data("")]).status();
        let _ = Command::new("losetup")
            .args(["-d", &self.loop_dev])
            .status();
    }
}

#[test]
fn a_user_reaches_a_share_and_a_file_comes_back_byte_identical() {
    let mut nas = Nas::new();
    let alice = nas.add_user("a", "alice's long password");
    let created = nas.add_share(json!({"name": "Family Photos 2024", "path": nas.data("photos"), "users": [alice], "comment": "Since 2010"}));
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert!(
        nas.listed().contains("Family Photos 2024"),
        "{}",
        nas.listed()
    );
    let conf = nas.smb_conf();
    assert!(
        conf.contains("   # SMB1 is slow and insecure"),
        "reasons are in the file"
    );
    assert!(conf.contains(&format!(
        "[Family Photos 2024]\n   comment = Since 2010\n   path = {}\n",
        nas.data("photos")
    )));

    let up = nas.dir.path().join("up.bin");
    let down = nas.dir.path().join("down.bin");
    let data: Vec<u8> = (0..50u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&up, &data).unwrap();
    let creds = format!("{alice}%alice's long password");
    let cmd = format!(
        "put {} big.bin; get big.bin {}",
        up.display(),
        down.display()
    );
    let out = nas.smbclient(&["//127.0.0.1/Family Photos 2024", "-U", &creds, "-c", &cmd]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read(&down).unwrap() == data,
        "50 MB came back byte-identical"
    );
    assert!(Path::new(&nas.data("photos/big.bin")).exists());

    let wrong = nas.smbclient(&[
        "//127.0.0.1/Family Photos 2024",
        "-U",
        &format!("{alice}%wrong password"),
        "-c",
        "ls",
    ]);
    assert!(!wrong.status.success());
    let users = nas.daemon.get("users", Some(&nas.session)).body;
    let me = users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == alice.as_str())
        .unwrap();
    assert_eq!(me["managed"], true);
    assert_eq!(me["disabled"], false);
}

#[test]
fn a_writable_share_at_a_filesystem_root_lets_its_user_write() {
    use std::os::unix::fs::MetadataExt;
    let mut nas = Nas::new();
    let bob = nas.add_user("r", "bob's long password");
    let root = nas.data("");
    let root = root.trim_end_matches('/');
    // A fresh filesystem's root: root's, 0755; smbd, forcing group users,
    // could not write into it.
    assert_eq!(std::fs::metadata(root).unwrap().mode() & 0o7777, 0o755);
    let created = nas.add_share(json!({"name": "disk", "path": root, "users": [bob]}));
    assert_eq!(created.status, 201, "{:?}", created.body);
    let changed = created.body["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 1, "{:?}", created.body);
    let folder = std::fs::metadata(root).unwrap();
    assert_eq!(folder.mode() & 0o7777, 0o2775, "group write and setgid");
    assert_eq!(folder.uid(), 0, "the owner stays");

    let file = nas.dir.path().join("note.txt");
    std::fs::write(&file, "written by bob").unwrap();
    let creds = format!("{bob}%bob's long password");
    let put = format!("put {} note.txt", file.display());
    let out = nas.smbclient(&["//127.0.0.1/disk", "-U", &creds, "-c", &put]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(nas.data("note.txt")).unwrap(),
        "written by bob"
    );

    // Applying the same share again changes nothing more.
    let again = nas.daemon.send(
        "PUT",
        "shares/disk",
        json!({"name": "disk", "path": root, "users": [bob]}),
        &nas.session,
    );
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(again.body["changed"], json!([]));
}

#[test]
fn a_read_only_guest_share_refuses_writes() {
    let nas = Nas::new();
    std::fs::create_dir_all(nas.data("public")).unwrap();
    std::fs::write(nas.data("public/readme.txt"), "hello").unwrap();
    let created = nas.add_share(
        json!({"name": "public", "path": nas.data("public"), "guest": true, "read_only": true}),
    );
    assert_eq!(created.status, 201, "{:?}", created.body);
    let read = nas.smbclient(&["//127.0.0.1/public", "-N", "-c", "ls"]);
    assert!(
        String::from_utf8_lossy(&read.stdout).contains("readme.txt"),
        "guests can read"
    );
    let file = nas.dir.path().join("note.txt");
    std::fs::write(&file, "x").unwrap();
    let write = nas.smbclient(&[
        "//127.0.0.1/public",
        "-N",
        "-c",
        &format!("put {} note.txt", file.display()),
    ]);
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&write.stdout),
        String::from_utf8_lossy(&write.stderr)
    );
    assert!(
        output.contains("NT_STATUS_ACCESS_DENIED")
            || output.contains("NT_STATUS_MEDIA_WRITE_PROTECTED"),
        "{output}"
    );
    assert!(!Path::new(&nas.data("public/note.txt")).exists());
    use std::os::unix::fs::MetadataExt;
    let folder = std::fs::metadata(nas.data("public")).unwrap();
    assert_eq!(
        folder.mode() & 0o7777,
        0o755,
        "a read-only share leaves its folder as it was"
    );
}

#[test]
fn injection_attempts_are_refused_and_smb_conf_is_byte_identical() {
    let nas = Nas::new();
    assert_eq!(
        nas.add_share(json!({"name": "films", "path": nas.data("films")}))
            .status,
        201
    );
    let before = nas.smb_conf();
    let attempts = [
        (
            json!({"name": "x]\n[global]\n   include = /tmp/evil", "path": nas.data("x")}),
            "name",
        ),
        (json!({"name": "global", "path": nas.data("x")}), "name"),
        (
            json!({"name": "ok", "path": nas.data("x"), "comment": "hi\n   path = /etc"}),
            "comment",
        ),
        (
            json!({"name": "ok", "path": nas.data("x"), "comment": "%u was here"}),
            "comment",
        ),
        (
            json!({"name": "ok", "path": format!("{}\n[evil]", nas.data("x"))}),
            "path",
        ),
        (
            json!({"name": "ok", "path": nas.data("x"), "users": ["root = yes"]}),
            "users",
        ),
        (
            json!({"name": "ok", "path": nas.data("x"), "nfs": {"clients": ["*(rw,no_root_squash)"]}}),
            "nfs.clients",
        ),
        (json!({"name": "ok", "path": "/var/tmp/nasd-share"}), "path"),
        (
            json!({"name": "ok", "path": format!("{} ", nas.data("x"))}),
            "path",
        ),
        (json!({"name": "ok", "path": "/proc/sys"}), "path"),
        (
            json!({"name": "ok", "path": "/proc/sys", "force": true}),
            "path",
        ),
    ];
    for (body, field) in attempts {
        let reply = nas.add_share(body.clone());
        assert_eq!(reply.status, 400, "{body}: {:?}", reply.body);
        assert_eq!(reply.body["field"], field, "{body}");
    }
    assert_eq!(nas.smb_conf(), before, "byte-identical");
    assert!(!Path::new(&nas.data("x")).exists(), "no folder made");
}

#[test]
fn a_symlink_out_of_the_data_disk_is_refused() {
    let nas = Nas::new();
    std::os::unix::fs::symlink("/etc", nas.data("escape")).unwrap();
    let reply = nas.add_share(json!({"name": "sneaky", "path": nas.data("escape/ssh")}));
    assert_eq!(reply.status, 400, "{:?}", reply.body);
    assert!(
        reply.body["error"]
            .as_str()
            .unwrap()
            .contains("symbolic link")
    );
}

#[test]
fn a_configuration_testparm_rejects_is_rolled_back_and_smbd_keeps_serving() {
    let nas = Nas::new();
    assert_eq!(
        nas.add_share(json!({"name": "films", "path": nas.data("films")}))
            .status,
        201
    );
    let before = nas.smb_conf();
    // A broken local include (an admin's typo) makes every candidate fail.
    let site = nas.dir.path().join("etc/samba/nasd-site.conf");
    let good_site = std::fs::read_to_string(&site).unwrap();
    std::fs::write(
        &site,
        format!("{good_site}   this is not a parameter = 1\n"),
    )
    .unwrap();
    let reply = nas.add_share(json!({"name": "music", "path": nas.data("music")}));
    assert_eq!(reply.status, 422, "{:?}", reply.body);
    assert!(
        reply.body["error"]
            .as_str()
            .unwrap()
            .starts_with("testparm refused")
    );
    assert_eq!(nas.smb_conf(), before);
    assert!(
        nas.listed().contains("films"),
        "the old shares are still served"
    );
    assert!(!nas.listed().contains("music"));
    std::fs::write(&site, good_site).unwrap();
    let shares = nas.daemon.get("shares", Some(&nas.session)).body;
    assert_eq!(
        shares["shares"].as_array().unwrap().len(),
        1,
        "the store kept the applied set"
    );
}

#[test]
fn users_follow_the_rules_and_one_in_use_stays() {
    let mut nas = Nas::new();
    let bad = nas.post(
        "users",
        json!({"username": "bob", "password": "two\nlines here"}),
    );
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["field"], "password");
    let bob = nas.add_user("b", "bob's fine password");
    assert_eq!(
        nas.post(
            "users",
            json!({"username": bob, "password": "another password"})
        )
        .status,
        409
    );
    assert_eq!(
        nas.add_share(json!({"name": "bobs", "path": nas.data("bobs"), "users": [bob]}))
            .status,
        201
    );
    let in_use = nas
        .daemon
        .send("DELETE", &format!("users/{bob}"), json!(null), &nas.session);
    assert_eq!(in_use.status, 409, "{:?}", in_use.body);
    let creds = format!("{bob}%new password 2");
    let changed = nas.daemon.send(
        "PUT",
        &format!("users/{bob}"),
        json!({"password": "new password 2"}),
        &nas.session,
    );
    assert_eq!(changed.status, 204, "{:?}", changed.body);
    assert!(
        nas.smbclient(&["//127.0.0.1/bobs", "-U", &creds, "-c", "ls"])
            .status
            .success()
    );
    let disabled = nas.daemon.send(
        "PUT",
        &format!("users/{bob}"),
        json!({"enabled": false}),
        &nas.session,
    );
    assert_eq!(disabled.status, 204);
    assert!(
        !nas.smbclient(&["//127.0.0.1/bobs", "-U", &creds, "-c", "ls"])
            .status
            .success()
    );
    assert_eq!(
        nas.daemon
            .send("DELETE", "shares/bobs", json!(null), &nas.session)
            .status,
        200
    );
    assert_eq!(
        nas.daemon
            .send("DELETE", &format!("users/{bob}"), json!(null), &nas.session)
            .status,
        204
    );
    assert!(
        !run("getent", &["passwd", &bob]).status.success(),
        "the system user nasd made is gone"
    );
}

#[test]
fn nfs_exports_and_announcements_are_rendered() {
    let nas = Nas::new();
    let reply = nas.add_share(json!({
        "name": "k8s",
        "path": nas.data("k8s"),
        "time_machine": true,
        "nfs": {"clients": ["10.0.0.0/24", "node-1.lan"]}
    }));
    assert_eq!(reply.status, 201, "{:?}", reply.body);
    let exports =
        std::fs::read_to_string(nas.dir.path().join("etc/exports.d/nasd.exports")).unwrap();
    assert!(
        exports.contains(&format!(
            "\"{}\" 10.0.0.0/24(rw,sync,no_subtree_check,root_squash) node-1.lan(rw,",
            nas.data("k8s")
        )),
        "{exports}"
    );
    // exportfs parses what nasd wrote: in a private mount namespace where
    // /etc/exports and /var/lib/nfs are this test's copies, so the
    // machine's own files are not touched (no NFS server runs here).
    let scratch = nas.dir.path().join("nfs-state");
    std::fs::create_dir_all(&scratch).unwrap();
    let exports_file = nas.dir.path().join("etc/exports.d/nasd.exports");
    let script = format!(
        "mount --bind {} /etc/exports && mount --bind {} /var/lib/nfs && exportfs -ra && cat /var/lib/nfs/etab",
        exports_file.display(),
        scratch.display()
    );
    let parsed = run("unshare", &["-m", "--", "sh", "-c", &script]);
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let etab = String::from_utf8_lossy(&parsed.stdout);
    assert!(
        etab.contains(&format!("{}\t10.0.0.0/24(rw,sync,", nas.data("k8s"))),
        "{etab}"
    );
    assert!(etab.contains("root_squash"));

    let status = nas.daemon.get("shares", Some(&nas.session)).body["status"].clone();
    if status["nfs_available"] == false {
        // No kernel NFS server here: written, and said so, not failed.
        assert!(
            reply.body["warnings"][0]
                .as_str()
                .unwrap()
                .contains("NFS server is not running")
        );
    }
    let avahi = std::fs::read_to_string(nas.dir.path().join("etc/avahi/services/nasd-smb.service"))
        .unwrap();
    assert!(avahi.contains("<type>_smb._tcp</type>") && avahi.contains("adVN=k8s"));
    assert!(nas.smb_conf().contains("fruit:time machine = yes"));
}
