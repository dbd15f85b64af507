//! Shared folders over Samba and NFS, and the Samba users that reach them.
//!
//! nasd implements no protocol: it owns smb.conf and an exports file,
//! rendered from the store, and drives testparm, smbcontrol, smbclient,
//! pdbedit, smbpasswd and exportfs. Every change is checked by the tool that
//! will read it before it is swapped in, and undone if the service does not
//! take it.

pub mod render;
pub mod rules;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::disks::parse as mounts;
use crate::host::runner::{RunError, Runner};
use crate::host::{Host, HostError};
use crate::store::{Store, StoreError};
use crate::validate::Invalid;

const SMB_CONF: &str = "samba/smb.conf";
const SMB_CANDIDATE: &str = "samba/smb.conf.nasd-candidate";
const EXPORTS: &str = "exports.d/nasd.exports";
const AVAHI_SERVICE: &str = "avahi/services/nasd-smb.service";
/// Mounts of the running system; a share there needs `force`.
const SYSTEM_MOUNTS: &[&str] = &[
    "/",
    "/boot",
    "/boot/firmware",
    "/boot/efi",
    "/media/boot",
    "/usr",
    "/var",
    "/home",
];
/// Filesystems that hold data on a disk; a share never lives on anything
/// else (proc, sysfs, tmpfs, a zram log mount...).
const DATA_FILESYSTEMS: &[&str] = &[
    "ext2", "ext3", "ext4", "xfs", "btrfs", "fuseblk", "ntfs3", "vfat", "exfat", "f2fs",
];
/// How long smbd may take to show a reloaded configuration.
const RELOAD_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ShareError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("no share or user named '{0}'")]
    NotFound(String),
    #[error("'{0}' exists already")]
    Exists(String),
    #[error("{0}")]
    InUse(String),
    #[error("{tool} refused the new configuration, which was not applied: {message}")]
    Rejected { tool: &'static str, message: String },
    #[error("{0}; the previous configuration was restored")]
    Restored(String),
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NfsExport {
    /// Host names, addresses or CIDR networks.
    pub clients: Vec<String>,
    #[serde(default)]
    pub read_only: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Share {
    pub name: String,
    pub path: String,
    #[serde(default)]
    pub comment: String,
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub guest: bool,
    /// Samba users allowed in; empty: every Samba user.
    #[serde(default)]
    pub users: Vec<String>,
    /// Announce to Macs as a Time Machine destination.
    #[serde(default)]
    pub time_machine: bool,
    #[serde(default)]
    pub nfs: Option<NfsExport>,
}

/// A share as asked for, with `force` for a folder on the system disk.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareRequest {
    pub name: String,
    pub path: String,
    #[serde(default)]
    pub comment: String,
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub guest: bool,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub time_machine: bool,
    #[serde(default)]
    pub nfs: Option<NfsExport>,
    #[serde(default)]
    pub force: bool,
}

impl ShareRequest {
    fn into_share(self) -> (Share, bool) {
        let share = Share {
            name: self.name,
            path: self.path,
            comment: self.comment,
            read_only: self.read_only,
            guest: self.guest,
            users: self.users,
            time_machine: self.time_machine,
            nfs: self.nfs,
        };
        (share, self.force)
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SambaUser {
    pub name: String,
    pub uid: Option<u32>,
    pub disabled: bool,
    /// Made by nasd (and its system user with it, where `system_user_made`).
    pub managed: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ServiceStatus {
    pub samba_installed: bool,
    pub smbd_running: bool,
    pub nfs_available: bool,
    pub avahi_installed: bool,
    pub wsdd_installed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ShareList {
    pub shares: Vec<Share>,
    pub status: ServiceStatus,
}

/// What an applied change could not do (NFS without a server, say).
#[derive(Debug, Clone, Serialize, Default)]
pub struct Applied {
    pub warnings: Vec<String>,
    /// Changes made beside the configuration (a folder's group, say).
    pub changed: Vec<String>,
}

pub struct Shares {
    host: Host,
    runner: Runner,
    store: Arc<Store>,
    /// Changes run one at a time: each renders from the whole set.
    changes: tokio::sync::Mutex<()>,
}

fn parse_listing(stdout: &str) -> Vec<String> {
    // smbclient -g -L: "Disk|name|comment" lines (the column layout without
    // -g runs names of 15 characters into the type).
    stdout
        .lines()
        .filter_map(|l| {
            l.strip_prefix("Disk|")?
                .split('|')
                .next()
                .map(str::to_owned)
        })
        .collect()
}

/// `pdbedit -L -w` lines: `name:uid:lm:nt:[flags]:LCT-...`.
fn parse_pdbedit(stdout: &str) -> Vec<(String, Option<u32>, bool)> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut fields = l.split(':');
            let name = fields.next()?.to_owned();
            let uid = fields.next()?.parse().ok();
            let flags = fields.nth(2)?;
            Some((name, uid, flags.contains('D')))
        })
        .collect()
}

impl Shares {
    pub fn new(host: Host, runner: Runner, store: Arc<Store>) -> Self {
        Self {
            host,
            runner,
            store,
            changes: tokio::sync::Mutex::new(()),
        }
    }

    fn conf_path(&self) -> PathBuf {
        self.host.etc_path(SMB_CONF)
    }

    pub fn shares(&self) -> Result<Vec<Share>, ShareError> {
        self.store
            .share_documents()?
            .iter()
            .map(|doc| {
                serde_json::from_str(doc).map_err(|e| {
                    ShareError::Unavailable(format!("a stored share does not read back: {e}"))
                })
            })
            .collect()
    }

    pub async fn list(&self) -> Result<ShareList, ShareError> {
        Ok(ShareList {
            shares: self.shares()?,
            status: self.status().await,
        })
    }

    pub async fn status(&self) -> ServiceStatus {
        ServiceStatus {
            samba_installed: self.runner.is_installed("smbd"),
            smbd_running: self.smbd_running().await,
            nfs_available: self.nfs_available(),
            avahi_installed: self.runner.is_installed("avahi-daemon"),
            wsdd_installed: self.runner.is_installed("wsdd"),
        }
    }

    fn nfs_available(&self) -> bool {
        self.runner.is_installed("exportfs") && self.host.nfsd_running()
    }

    async fn smbd_running(&self) -> bool {
        let conf = self.conf_path();
        let args = [
            "-s".as_ref(),
            conf.as_os_str(),
            "smbd".as_ref(),
            "ping".as_ref(),
        ];
        matches!(self.runner.run_unchecked("smbcontrol", &args, None).await, Ok(out) if out.code == Some(0))
    }

    pub async fn add(&self, req: ShareRequest) -> Result<Applied, ShareError> {
        let _one_at_a_time = self.changes.lock().await;
        let mut shares = self.shares()?;
        if shares
            .iter()
            .any(|s| s.name.eq_ignore_ascii_case(&req.name))
        {
            return Err(ShareError::Exists(req.name));
        }
        let (share, force) = req.into_share();
        self.check(&share, force).await?;
        shares.push(share.clone());
        let applied = self.apply(shares).await?;
        Ok(self.open_folder_to_users(&share, applied).await)
    }

    pub async fn update(&self, name: &str, req: ShareRequest) -> Result<Applied, ShareError> {
        let _one_at_a_time = self.changes.lock().await;
        let mut shares = self.shares()?;
        let index = shares
            .iter()
            .position(|s| s.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| ShareError::NotFound(name.to_owned()))?;
        if !req.name.eq_ignore_ascii_case(name)
            && shares
                .iter()
                .any(|s| s.name.eq_ignore_ascii_case(&req.name))
        {
            return Err(ShareError::Exists(req.name));
        }
        let (share, force) = req.into_share();
        self.check(&share, force).await?;
        shares[index] = share.clone();
        let applied = self.apply(shares).await?;
        Ok(self.open_folder_to_users(&share, applied).await)
    }

    /// A writable share whose folder the `users` group cannot write into
    /// (a filesystem's root, owned by root) would refuse every write: once
    /// the share is applied, its folder gets group `users`, group write
    /// and setgid (and, for a writable guest share, write for all, as smbd
    /// maps guests to nobody). Not recursive: files inside keep theirs.
    async fn open_folder_to_users(&self, share: &Share, mut applied: Applied) -> Applied {
        if share.read_only {
            return applied;
        }
        let Some(gid) = self.users_gid().await else {
            applied
                .warnings
                .push("there is no 'users' group: the share's folder was left as it is".into());
            return applied;
        };
        let bits = if share.guest { 0o2777 } else { 0o2770 };
        match self
            .host
            .ensure_dir_group_access(Path::new(&share.path), gid, bits)
        {
            Ok(Some(change)) => applied.changed.push(change),
            Ok(None) => {}
            Err(err) => applied
                .warnings
                .push(format!("users may not be able to write: {err}")),
        }
        applied
    }

    pub async fn remove(&self, name: &str) -> Result<Applied, ShareError> {
        let _one_at_a_time = self.changes.lock().await;
        let mut shares = self.shares()?;
        let before = shares.len();
        shares.retain(|s| !s.name.eq_ignore_ascii_case(name));
        if shares.len() == before {
            return Err(ShareError::NotFound(name.to_owned()));
        }
        self.apply(shares).await
    }

    /// Every rule a share must meet, checked before anything is written;
    /// then its folder is made if it is missing.
    async fn check(&self, share: &Share, force: bool) -> Result<(), ShareError> {
        rules::share_name(&share.name)?;
        rules::comment(&share.comment)?;
        rules::share_path(&share.path)?;
        let known: Vec<String> = self.users().await?.into_iter().map(|u| u.name).collect();
        for user in &share.users {
            rules::user_name(user).map_err(|i| Invalid::new("users", i.rule))?;
            if !known.contains(user) {
                return Err(Invalid::new(
                    "users",
                    format!("'{user}' is not a Samba user; add it first"),
                )
                .into());
            }
        }
        if let Some(nfs) = &share.nfs {
            if nfs.clients.is_empty() {
                return Err(Invalid::new("nfs.clients", "name at least one client").into());
            }
            for client in &nfs.clients {
                rules::nfs_client(client)?;
            }
        }
        let mounts = self
            .host
            .mountinfo()?
            .map(|t| mounts::mountinfo(&t))
            .unwrap_or_default();
        let path = Path::new(&share.path);
        let mount = mounts
            .iter()
            .filter(|m| path.starts_with(&m.mountpoint))
            .max_by_key(|m| m.mountpoint.len())
            .ok_or_else(|| Invalid::new("path", "is on no mounted filesystem"))?;
        if !mount.source.starts_with("/dev/") || !DATA_FILESYSTEMS.contains(&mount.fs_type.as_str())
        {
            return Err(Invalid::new(
                "path",
                format!(
                    "is on {} ({}), not a filesystem on a disk",
                    mount.mountpoint, mount.fs_type
                ),
            )
            .into());
        }
        if SYSTEM_MOUNTS.contains(&mount.mountpoint.as_str()) && !force {
            return Err(Invalid::new(
                "path",
                format!("is on the system's own filesystem ({}); share a folder on a data disk, or set force", mount.mountpoint),
            )
            .into());
        }
        // Resolve what exists of the path: a symlink must not lead out of
        // the filesystem the path names.
        let resolved = self.host.resolve_existing(path)?;
        if !resolved.starts_with(&mount.mountpoint) {
            return Err(Invalid::new(
                "path",
                format!(
                    "leads out of {} through a symbolic link (to {})",
                    mount.mountpoint,
                    resolved.display()
                ),
            )
            .into());
        }
        let gid = self.users_gid().await;
        let mode = if share.guest && !share.read_only {
            0o2777
        } else {
            0o2775
        };
        self.host.create_share_dir(path, mode, gid)?;
        Ok(())
    }

    /// The group every NAS user is in (`users`), whose members may write.
    async fn users_gid(&self) -> Option<u32> {
        let out = self.runner.run("getent", &["group", "users"]).await.ok()?;
        out.stdout.split(':').nth(2)?.trim().parse().ok()
    }

    /// Renders and applies smb.conf, exports and the Avahi file for
    /// `shares`; on success they become the stored set.
    async fn apply(&self, shares: Vec<Share>) -> Result<Applied, ShareError> {
        let mut applied = Applied::default();
        let previous_smb = self.apply_samba(&shares).await?;
        // NFS is checked by exportfs; if it refuses, Samba goes back too, so
        // the store, smb.conf and exports always describe the same set.
        let exported = self.apply_nfs(&shares, &mut applied).await;
        let documents = shares
            .iter()
            .map(|s| {
                serde_json::to_string(s)
                    .map(|doc| (s.name.clone(), doc))
                    .map_err(|e| Invalid::new("share", e.to_string()))
            })
            .collect::<Result<Vec<_>, Invalid>>();
        let stored = match (exported, documents) {
            (Err(err), _) => Err(err),
            (Ok(()), Err(invalid)) => Err(invalid.into()),
            (Ok(()), Ok(documents)) => self
                .store
                .put_share_documents(&documents)
                .map_err(ShareError::from),
        };
        if let Err(err) = stored {
            self.restore_samba(previous_smb).await;
            return Err(err);
        }
        // Announcements are a convenience: failing them fails nothing.
        if let Err(err) = self
            .host
            .write_etc_atomic(AVAHI_SERVICE, &render::avahi_service(&shares))
        {
            applied.warnings.push(format!(
                "Macs and Linux will not find the box by itself: {err}"
            ));
        }
        if let Err(err) = self.ensure_wsdd().await {
            applied
                .warnings
                .push(format!("Windows will not find the box by itself: {err}"));
        }
        Ok(applied)
    }

    /// Puts back the smb.conf that was there before (none: removes ours).
    async fn restore_samba(&self, previous: Option<String>) {
        let restored = match previous {
            Some(old) => self.host.write_etc_atomic(SMB_CONF, &old),
            None => {
                self.host.remove_etc(SMB_CONF);
                Ok(())
            }
        };
        if let Err(err) = restored {
            tracing::error!("smb.conf could not be restored: {err}");
        }
        let _ = self.reload_samba().await;
    }

    /// WS-Discovery makes the box appear in Windows' network view; Avahi
    /// does the same for macOS and Linux and reads its file by itself.
    async fn ensure_wsdd(&self) -> Result<(), ShareError> {
        if !self.runner.is_installed("wsdd") || !self.host.systemd_running() {
            return Ok(());
        }
        let active = self
            .runner
            .run_unchecked("systemctl", &["is-active", "--quiet", "wsdd"], None)
            .await?;
        if active.code != Some(0) {
            self.runner
                .run("systemctl", &["enable", "--now", "wsdd"])
                .await?;
        }
        Ok(())
    }

    /// Applies smb.conf for `shares`; returns the file it replaced.
    async fn apply_samba(&self, shares: &[Share]) -> Result<Option<String>, ShareError> {
        if !self.runner.is_installed("testparm") {
            return Err(ShareError::Unavailable(
                "Samba is not installed (no testparm)".into(),
            ));
        }
        let site = self
            .host
            .etc_path(&format!("samba/{}", render::SITE_INCLUDE));
        let site = site.exists().then(|| site.to_string_lossy().into_owned());
        let rendered = render::smb_conf(shares, site.as_deref());
        // testparm reads the candidate before it replaces anything.
        self.host.write_etc_atomic(SMB_CANDIDATE, &rendered)?;
        let candidate = self.host.etc_path(SMB_CANDIDATE);
        let check = self
            .runner
            .run_unchecked(
                "testparm",
                &[
                    "-s".as_ref(),
                    "--suppress-prompt".as_ref(),
                    candidate.as_os_str(),
                ],
                None,
            )
            .await;
        self.host.remove_etc(SMB_CANDIDATE);
        let check = check?;
        let complaint = check.stderr.lines().find(|l| {
            l.contains("Unknown parameter") || l.contains("ERROR") || l.contains("Ignoring")
        });
        if check.code != Some(0) || complaint.is_some() {
            return Err(ShareError::Rejected {
                tool: "testparm",
                message: complaint.unwrap_or(&check.stderr).to_owned(),
            });
        }
        let previous = self.host.read_etc(SMB_CONF)?;
        if previous.as_deref() == Some(rendered.as_str()) && self.smbd_running().await {
            return Ok(previous);
        }
        self.host.write_etc_atomic(SMB_CONF, &rendered)?;
        let live = self
            .reload_samba()
            .await
            .and(self.verify_listed(shares).await);
        if let Err(err) = live {
            self.restore_samba(previous).await;
            return Err(ShareError::Restored(err.to_string()));
        }
        Ok(previous)
    }

    /// Tells smbd to re-read its configuration, starting it if it is not
    /// running (through systemd where systemd runs).
    async fn reload_samba(&self) -> Result<(), ShareError> {
        let conf = self.conf_path();
        let reload = [
            "-s".as_ref(),
            conf.as_os_str(),
            "smbd".as_ref(),
            "reload-config".as_ref(),
        ];
        let out = self
            .runner
            .run_unchecked("smbcontrol", &reload, None)
            .await?;
        if out.code == Some(0) {
            return Ok(());
        }
        if self.host.systemd_running() {
            self.runner.run("systemctl", &["start", "smbd"]).await?;
        } else {
            self.runner
                .run("smbd", &["-D".as_ref(), "-s".as_ref(), conf.as_os_str()])
                .await?;
        }
        let started = std::time::Instant::now();
        while started.elapsed() < RELOAD_WAIT {
            if self.smbd_running().await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(ShareError::Unavailable("smbd did not start".into()))
    }

    /// Asks the running smbd for its share list until every share is in it.
    async fn verify_listed(&self, shares: &[Share]) -> Result<(), ShareError> {
        let conf = self.conf_path();
        let port = self
            .runner
            .run(
                "testparm",
                &[
                    "-s".as_ref(),
                    "--parameter-name=smb ports".as_ref(),
                    conf.as_os_str(),
                ],
            )
            .await?
            .stdout
            .split_whitespace()
            .next()
            .unwrap_or("445")
            .to_owned();
        let started = std::time::Instant::now();
        loop {
            let out = self
                .runner
                .run_unchecked(
                    "smbclient",
                    &[
                        "-N".as_ref(),
                        "-g".as_ref(),
                        "-L".as_ref(),
                        "//127.0.0.1".as_ref(),
                        "-p".as_ref(),
                        port.as_ref(),
                        "-s".as_ref(),
                        conf.as_os_str(),
                    ],
                    None,
                )
                .await?;
            let listed = parse_listing(&out.stdout);
            let missing: Vec<&str> = shares
                .iter()
                .filter(|s| !listed.iter().any(|l| l.eq_ignore_ascii_case(&s.name)))
                .map(|s| s.name.as_str())
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if started.elapsed() > RELOAD_WAIT {
                return Err(ShareError::Unavailable(format!(
                    "smbd does not list {} after the reload",
                    missing.join(", ")
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn apply_nfs(&self, shares: &[Share], applied: &mut Applied) -> Result<(), ShareError> {
        let rendered = render::exports(shares);
        let previous = self.host.read_etc(EXPORTS)?;
        if previous.as_deref() == Some(rendered.as_str()) {
            return Ok(());
        }
        self.host.write_etc_atomic(EXPORTS, &rendered)?;
        if !self.nfs_available() {
            if shares.iter().any(|s| s.nfs.is_some()) {
                applied.warnings.push(
                    "the NFS server is not running here: the exports are written and apply when it starts".into(),
                );
            }
            return Ok(());
        }
        if let Err(err) = self.runner.run("exportfs", &["-ra"]).await {
            match previous {
                Some(old) => self.host.write_etc_atomic(EXPORTS, &old)?,
                None => self.host.remove_etc(EXPORTS),
            }
            let _ = self.runner.run("exportfs", &["-ra"]).await;
            return Err(ShareError::Restored(format!(
                "exportfs refused the exports: {err}"
            )));
        }
        Ok(())
    }

    pub async fn users(&self) -> Result<Vec<SambaUser>, ShareError> {
        if !self.runner.is_installed("pdbedit") {
            return Ok(Vec::new());
        }
        let conf = self.conf_path();
        let mut args: Vec<&std::ffi::OsStr> = vec!["-L".as_ref(), "-w".as_ref()];
        if conf.exists() {
            args.extend(["-s".as_ref(), conf.as_os_str()]);
        }
        let out = self.runner.run("pdbedit", &args).await?;
        parse_pdbedit(&out.stdout)
            .into_iter()
            .map(|(name, uid, disabled)| {
                Ok(SambaUser {
                    managed: self.store.samba_user(&name)?.is_some(),
                    name,
                    uid,
                    disabled,
                })
            })
            .collect()
    }

    fn smbpasswd_args<'a>(
        &'a self,
        conf: &'a Path,
        flags: &[&'a str],
        name: &'a str,
    ) -> Vec<&'a std::ffi::OsStr> {
        let mut args: Vec<&std::ffi::OsStr> = vec!["-c".as_ref(), conf.as_os_str()];
        args.extend(flags.iter().map(|f| std::ffi::OsStr::new(*f)));
        args.push(name.as_ref());
        args
    }

    /// useradd and userdel, retried while another process (a package
    /// install, a second admin action) holds the lock on /etc/passwd.
    async fn run_account_tool(&self, program: &str, args: &[&str]) -> Result<(), ShareError> {
        for attempt in 0..10 {
            match self.runner.run(program, args).await {
                Err(RunError::Failed { stderr, .. }) if stderr.contains("lock") && attempt < 9 => {
                    tokio::time::sleep(Duration::from_millis(100 * (attempt + 1))).await;
                }
                other => return other.map(|_| ()).map_err(ShareError::from),
            }
        }
        Ok(())
    }

    /// Samba's tools find their user database through smb.conf, so nasd's
    /// must be in place (and smbd running) before users are managed.
    async fn ensure_samba_config(&self) -> Result<(), ShareError> {
        if self.host.read_etc(SMB_CONF)?.is_none() || !self.smbd_running().await {
            self.apply_samba(&self.shares()?).await?;
        }
        Ok(())
    }

    /// Adds a Samba user, making a no-login system user for it when there
    /// is none. The password goes to smbpasswd on standard input only.
    pub async fn add_user(&self, name: &str, password: &str) -> Result<(), ShareError> {
        rules::user_name(name)?;
        rules::password(password)?;
        let _one_at_a_time = self.changes.lock().await;
        self.ensure_samba_config().await?;
        if self.users().await?.iter().any(|u| u.name == name) {
            return Err(ShareError::Exists(name.to_owned()));
        }
        let account = self
            .runner
            .run_unchecked("getent", &["passwd", name], None)
            .await?;
        let has_system_user = account.code == Some(0);
        let uid: Option<u32> = account
            .stdout
            .split(':')
            .nth(2)
            .and_then(|u| u.trim().parse().ok());
        // An existing service account (root, www-data...) is not made into
        // a Samba user: its files would be open to whoever has the password.
        if let (true, Some(uid)) = (has_system_user, uid)
            && uid < 1000
        {
            return Err(Invalid::new(
                "username",
                format!("'{name}' is a system account (uid {uid}); choose another name"),
            )
            .into());
        }
        if !has_system_user {
            self.run_account_tool(
                "useradd",
                &[
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    "--gid",
                    "users",
                    "--comment",
                    "nasd share user",
                    name,
                ],
            )
            .await?;
        }
        let conf = self.conf_path();
        let input = format!("{password}\n{password}\n");
        let added = self
            .runner
            .run_with_input(
                "smbpasswd",
                &self.smbpasswd_args(&conf, &["-s", "-a"], name),
                &input,
            )
            .await;
        if let Err(err) = added {
            if !has_system_user {
                let _ = self.run_account_tool("userdel", &[name]).await;
            }
            return Err(err.into());
        }
        self.store.put_samba_user(name, !has_system_user)?;
        tracing::info!(user = %name, "Samba user added");
        Ok(())
    }

    async fn require_user(&self, name: &str) -> Result<(), ShareError> {
        rules::user_name(name)?;
        if self.users().await?.iter().any(|u| u.name == name) {
            Ok(())
        } else {
            Err(ShareError::NotFound(name.to_owned()))
        }
    }

    pub async fn set_password(&self, name: &str, password: &str) -> Result<(), ShareError> {
        rules::password(password)?;
        let _one_at_a_time = self.changes.lock().await;
        self.require_user(name).await?;
        let conf = self.conf_path();
        let input = format!("{password}\n{password}\n");
        self.runner
            .run_with_input(
                "smbpasswd",
                &self.smbpasswd_args(&conf, &["-s"], name),
                &input,
            )
            .await?;
        Ok(())
    }

    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), ShareError> {
        let _one_at_a_time = self.changes.lock().await;
        self.require_user(name).await?;
        let conf = self.conf_path();
        let flag = if enabled { "-e" } else { "-d" };
        self.runner
            .run("smbpasswd", &self.smbpasswd_args(&conf, &[flag], name))
            .await?;
        Ok(())
    }

    /// Removes a Samba user (and its system user, if nasd made it). A user
    /// still named by a share is refused.
    pub async fn remove_user(&self, name: &str) -> Result<(), ShareError> {
        let _one_at_a_time = self.changes.lock().await;
        self.require_user(name).await?;
        let using: Vec<String> = self
            .shares()?
            .into_iter()
            .filter(|s| s.users.iter().any(|u| u == name))
            .map(|s| s.name)
            .collect();
        if !using.is_empty() {
            return Err(ShareError::InUse(format!(
                "{name} is allowed in {}; take it out of them first",
                using.join(", ")
            )));
        }
        let conf = self.conf_path();
        self.runner
            .run("smbpasswd", &self.smbpasswd_args(&conf, &["-x"], name))
            .await?;
        if self.store.samba_user(name)? == Some(true) {
            self.run_account_tool("userdel", &[name]).await?;
        }
        self.store.delete_samba_user(name)?;
        tracing::info!(user = %name, "Samba user removed");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smbclient_listing_and_pdbedit_lines() {
        let listing = "Disk|Family Pictures|\nDisk|Time Machine|Macs\nDisk|pub|\nIPC|IPC$|IPC Service (Samba)\n";
        assert_eq!(
            parse_listing(listing),
            ["Family Pictures", "Time Machine", "pub"]
        );
        let users = "alice:1001:XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX:8846F7EAEE8FB117AD06BDD830B7586C:[U          ]:LCT-6570B9A4:\nbob:1002:X:Y:[DU         ]:LCT-1:\n";
        assert_eq!(
            parse_pdbedit(users),
            [
                ("alice".to_owned(), Some(1001), false),
                ("bob".to_owned(), Some(1002), true)
            ]
        );
    }
}
