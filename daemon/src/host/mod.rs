//! The only door to the machine.
//!
//! Every read of `/sys`, `/proc`, `/dev`, `/run/udev` and `/etc` goes through a
//! [`Host`] rooted at a directory, so the whole daemon can run against a fixture
//! tree copied from a real board. Every external program goes through the
//! [`runner::Runner`]. Nothing outside this module names a system path or
//! spawns a process.

pub mod block;
pub mod kernel;
pub mod knobs;
pub mod runner;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Where the daemon looks for its configuration when `--config` is not given.
/// It is the daemon's own file, not the board's, so it is not under the root.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/nasd/nasd.toml";

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("root {0} is not a directory")]
    RootMissing(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// A view of the machine's system trees, rooted at `/` on a real board or at
/// a fixture directory in tests.
#[derive(Debug, Clone)]
pub struct Host {
    root: PathBuf,
    /// `/etc`, apart from the root so that tests can write fstab and
    /// smb.conf into a temporary directory while using the real /dev.
    etc: PathBuf,
}

/// One entry of a sysfs class or device directory: its name and the text of
/// the attribute files that were readable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysEntry {
    pub name: String,
    pub attrs: BTreeMap<String, String>,
}

impl SysEntry {
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.get(name).map(String::as_str)
    }
}

impl Host {
    pub fn new(root: impl Into<PathBuf>) -> Result<Self, HostError> {
        let root = root.into();
        if !root.is_dir() {
            return Err(HostError::RootMissing(root));
        }
        // Absolute, so that resolved sysfs links can be related to it.
        let root = root.canonicalize().map_err(|err| io_error(&root, err))?;
        Ok(Self {
            etc: root.join("etc"),
            root,
        })
    }

    /// Reads and writes `/etc` files under `etc` instead of `<root>/etc`.
    pub fn with_etc_dir(mut self, etc: impl Into<PathBuf>) -> Self {
        self.etc = etc.into();
        self
    }

    /// The path of a file in `/etc`, such as `fstab`.
    pub fn etc_path(&self, name: &str) -> PathBuf {
        self.etc.join(name)
    }

    pub fn read_etc(&self, name: &str) -> Result<Option<String>, HostError> {
        let path = self.etc_path(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(io_error(&path, err)),
        }
    }

    /// Replaces an `/etc` file so that a crash leaves either the old or the
    /// new file, never half of one: write a temporary file beside it, fsync,
    /// keep the old one as `<name>.nasd-previous`, rename, fsync the folder.
    pub fn write_etc_atomic(&self, name: &str, contents: &str) -> Result<(), HostError> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let target = self.etc_path(name);
        let dir = target.parent().unwrap_or(&self.etc).to_path_buf();
        // `name` may have folders in it (`samba/smb.conf`).
        let file_name = target
            .file_name()
            .map_or_else(|| name.to_owned(), |n| n.to_string_lossy().into_owned());
        let temp = dir.join(format!(".{file_name}.nasd-tmp"));
        let mode = std::fs::metadata(&target).map_or(0o644, |m| m.permissions().mode());
        let write = || -> io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(contents.as_bytes())?;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            file.sync_all()?;
            if target.exists() {
                std::fs::copy(&target, dir.join(format!("{file_name}.nasd-previous")))?;
            }
            std::fs::rename(&temp, &target)?;
            std::fs::File::open(&dir)?.sync_all()
        };
        write().map_err(|err| {
            let _ = std::fs::remove_file(&temp);
            io_error(&target, err)
        })
    }

    /// True when this host is the running machine rather than a fixture tree.
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// Maps an absolute system path (`/sys/...`) into the root.
    fn resolve(&self, system_path: &str) -> PathBuf {
        self.root.join(system_path.trim_start_matches('/'))
    }

    /// Reads a text attribute, trimmed. Absent hardware is `None`, not an
    /// error: sysfs answers a missing or momentarily unreadable attribute with
    /// ENOENT, EINVAL (a link that is down has no speed) or ENODATA (a sensor
    /// that has not sampled yet).
    pub fn read_text(&self, system_path: &str) -> Result<Option<String>, HostError> {
        read_attr(&self.resolve(system_path))
    }

    /// Removes an `/etc` file nasd wrote; one already gone is fine.
    pub fn remove_etc(&self, name: &str) {
        let _ = std::fs::remove_file(self.etc_path(name));
    }

    /// Whether systemd manages this machine (it may start services).
    pub fn systemd_running(&self) -> bool {
        self.resolve("/run/systemd/system").is_dir()
    }

    /// Whether the kernel NFS server is up (its control filesystem).
    pub fn nfsd_running(&self) -> bool {
        self.resolve("/proc/fs/nfsd/exports").exists()
    }

    /// A system path with every part that exists resolved (symlinks
    /// followed), and the parts that do not exist yet appended unchanged.
    pub fn resolve_existing(&self, path: &Path) -> Result<PathBuf, HostError> {
        let full = self.resolve(&path.to_string_lossy());
        let mut existing = full.as_path();
        let mut missing = Vec::new();
        while !existing.exists() {
            let Some(parent) = existing.parent() else {
                break;
            };
            if let Some(name) = existing.file_name() {
                missing.push(name.to_owned());
            }
            existing = parent;
        }
        let mut resolved = existing.canonicalize().map_err(|e| io_error(existing, e))?;
        resolved.extend(missing.iter().rev());
        let relative = resolved.strip_prefix(&self.root).unwrap_or(&resolved);
        Ok(Path::new("/").join(relative))
    }

    /// Makes a shared folder if it is missing, with `mode` and group `gid`;
    /// an existing folder is left as it is (see [`Host::ensure_dir_group_access`]).
    pub fn create_share_dir(
        &self,
        path: &Path,
        mode: u32,
        gid: Option<u32>,
    ) -> Result<(), HostError> {
        use rustix::fs::Mode;
        let (dir, created) = self.open_dir_nofollow(path, true)?;
        if created {
            let err = |e: rustix::io::Errno| io_error(path, e.into());
            rustix::fs::fchown(&dir, None, gid.map(rustix::fs::Gid::from_raw)).map_err(err)?;
            // After chown, which clears the setgid bit.
            rustix::fs::fchmod(&dir, Mode::from_raw_mode(mode)).map_err(err)?;
        }
        Ok(())
    }

    /// Gives group `gid` the permission `bits` on an existing folder (so the
    /// users of a writable share can write into a folder root made), and
    /// says what changed, if anything. Only the folder itself: what is in
    /// it keeps the permissions its owners gave it.
    pub fn ensure_dir_group_access(
        &self,
        path: &Path,
        gid: u32,
        bits: u32,
    ) -> Result<Option<String>, HostError> {
        use rustix::fs::Mode;
        let err = |e: rustix::io::Errno| io_error(path, e.into());
        let (dir, _) = self.open_dir_nofollow(path, false)?;
        let stat = rustix::fs::fstat(&dir).map_err(err)?;
        let current = Mode::from_raw_mode(stat.st_mode);
        let wanted = current | Mode::from_raw_mode(bits);
        if stat.st_gid == gid && current == wanted {
            return Ok(None);
        }
        rustix::fs::fchown(&dir, None, Some(rustix::fs::Gid::from_raw(gid))).map_err(err)?;
        rustix::fs::fchmod(&dir, wanted).map_err(err)?;
        Ok(Some(format!(
            "{}: group {} and mode {:o} (were {} and {:o})",
            path.display(),
            gid,
            wanted.bits(),
            stat.st_gid,
            current.bits()
        )))
    }

    /// Opens a folder with every component opened without following
    /// symbolic links, making missing ones when `create`, so that a link
    /// planted between a caller's check and its change cannot redirect the
    /// change (to /etc, say). Says whether the last component was made.
    fn open_dir_nofollow(
        &self,
        path: &Path,
        create: bool,
    ) -> Result<(rustix::fd::OwnedFd, bool), HostError> {
        use rustix::fs::{Mode, OFlags};
        let full = self.resolve(&path.to_string_lossy());
        let err = |e: rustix::io::Errno| io_error(&full, e.into());
        let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut dir = rustix::fs::open(&self.root, flags, Mode::empty()).map_err(err)?;
        let relative = full.strip_prefix(&self.root).unwrap_or(&full);
        let mut created = false;
        for part in relative.components() {
            let std::path::Component::Normal(name) = part else {
                continue;
            };
            created = false;
            dir = match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
                Ok(next) => next,
                Err(rustix::io::Errno::NOENT) if create => {
                    rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)).map_err(err)?;
                    created = true;
                    let made = rustix::fs::openat(&dir, name, flags, Mode::empty()).map_err(err)?;
                    // 0755 whatever the umask (the unit's is 0077): the
                    // share's users must get through the folders on the way.
                    rustix::fs::fchmod(&made, Mode::from_raw_mode(0o755)).map_err(err)?;
                    made
                }
                // ELOOP or ENOTDIR: a symbolic link or a file on the way.
                Err(e) => return Err(err(e)),
            };
        }
        Ok((dir, created))
    }

    /// Names in a directory, sorted; a missing directory is empty.
    pub fn list_dir(&self, system_path: &str) -> Result<Vec<String>, HostError> {
        list_names(&self.resolve(system_path))
    }

    /// Entries of a sysfs directory whose names start with `prefix`, with the
    /// named attributes (those ending in `*` match by prefix) that exist.
    pub fn sys_entries(
        &self,
        dir: &str,
        prefix: &str,
        attrs: &[&str],
    ) -> Result<Vec<SysEntry>, HostError> {
        let base = self.resolve(dir);
        let mut entries = Vec::new();
        for name in list_names(&base)?
            .into_iter()
            .filter(|n| n.starts_with(prefix))
        {
            let path = base.join(&name);
            entries.push(SysEntry {
                attrs: read_attrs(&path, attrs)?,
                name,
            });
        }
        Ok(entries)
    }
}

fn io_error(path: &Path, source: io::Error) -> HostError {
    HostError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn is_absent(err: &io::Error) -> bool {
    const EINVAL: i32 = 22;
    const ENODATA: i32 = 61;
    const EACCES: i32 = 13;
    // EACCES: some attributes (cpuinfo_cur_freq) are root-only; to a user
    // they are as good as absent.
    err.kind() == io::ErrorKind::NotFound
        || matches!(err.raw_os_error(), Some(EINVAL | ENODATA | EACCES))
}

fn read_attr(path: &Path) -> Result<Option<String>, HostError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).trim().to_owned())),
        Err(err) if is_absent(&err) => Ok(None),
        // A directory where a file was expected is a layout this kernel
        // does not have; treat as absent rather than failing the inventory.
        Err(err) if err.kind() == io::ErrorKind::IsADirectory => Ok(None),
        Err(err) => Err(io_error(path, err)),
    }
}

fn list_names(dir: &Path) -> Result<Vec<String>, HostError> {
    let iter = match std::fs::read_dir(dir) {
        Ok(iter) => iter,
        Err(err) if is_absent(&err) => return Ok(Vec::new()),
        Err(err) => return Err(io_error(dir, err)),
    };
    let mut names = Vec::new();
    for entry in iter {
        let entry = entry.map_err(|e| io_error(dir, e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort_by(|a, b| natural_cmp(a, b));
    Ok(names)
}

fn read_attrs(dir: &Path, wanted: &[&str]) -> Result<BTreeMap<String, String>, HostError> {
    let mut attrs = BTreeMap::new();
    let wildcard: Vec<&str> = wanted.iter().filter_map(|w| w.strip_suffix('*')).collect();
    let names: Vec<String> = if wildcard.is_empty() {
        wanted.iter().map(|s| (*s).to_owned()).collect()
    } else {
        let mut names: Vec<String> = wanted
            .iter()
            .filter(|w| !w.ends_with('*'))
            .map(|s| (*s).to_owned())
            .collect();
        names.extend(
            list_names(dir)?
                .into_iter()
                .filter(|n| wildcard.iter().any(|p| n.starts_with(p))),
        );
        names
    };
    for name in names {
        if let Some(value) = read_attr(&dir.join(&name))? {
            attrs.insert(name, value);
        }
    }
    Ok(attrs)
}

/// Orders `thermal_zone10` after `thermal_zone9`, as a person expects.
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn split(s: &str) -> (&str, Option<u64>) {
        let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (head, tail) = s.split_at(s.len() - digits);
        (head, tail.parse().ok())
    }
    split(a).cmp(&split(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_puts_ten_after_nine() {
        let mut names = vec!["zone10", "zone9", "zone1", "cpu", "zone"];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(names, ["cpu", "zone", "zone1", "zone9", "zone10"]);
    }

    #[test]
    fn missing_root_is_an_error_naming_it() {
        let err = Host::new("/nonexistent/nasd-root").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/nasd-root"));
    }

    #[test]
    fn absent_attributes_and_directories_are_not_errors() {
        let dir = tempfile::tempdir().unwrap();
        let host = Host::new(dir.path()).unwrap();
        assert_eq!(host.read_text("/sys/nothing").unwrap(), None);
        assert!(host.list_dir("/sys/class/thermal").unwrap().is_empty());
    }

    #[test]
    fn etc_writes_are_atomic_keep_the_previous_file_and_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let etc = tempfile::tempdir().unwrap();
        let host = Host::new(root.path()).unwrap().with_etc_dir(etc.path());
        assert_eq!(host.read_etc("fstab").unwrap(), None);
        host.write_etc_atomic("fstab", "one\n").unwrap();
        std::fs::set_permissions(
            etc.path().join("fstab"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        host.write_etc_atomic("fstab", "two\n").unwrap();
        host.write_etc_atomic("samba/smb.conf", "[global]\n")
            .unwrap();
        assert!(etc.path().join("samba/smb.conf").is_file());
        assert_eq!(host.read_etc("fstab").unwrap().as_deref(), Some("two\n"));
        let previous = std::fs::read_to_string(etc.path().join("fstab.nasd-previous")).unwrap();
        assert_eq!(previous, "one\n");
        let mode = std::fs::metadata(etc.path().join("fstab"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            !root.path().join("etc").exists(),
            "nothing written under the root"
        );
    }

    #[test]
    fn sys_entries_reads_named_and_prefixed_attributes() {
        let dir = tempfile::tempdir().unwrap();
        let chip = dir.path().join("sys/class/hwmon/hwmon0");
        std::fs::create_dir_all(&chip).unwrap();
        std::fs::write(chip.join("name"), "drivetemp\n").unwrap();
        std::fs::write(chip.join("temp1_input"), "31000\n").unwrap();
        std::fs::write(chip.join("fan1_input"), "1200\n").unwrap();
        let host = Host::new(dir.path()).unwrap();
        let entries = host
            .sys_entries("/sys/class/hwmon", "hwmon", &["name", "temp*"])
            .unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].attr("name"), Some("drivetemp"));
        assert_eq!(entries[0].attr("temp1_input"), Some("31000"));
        assert_eq!(entries[0].attr("fan1_input"), None);
    }
}
