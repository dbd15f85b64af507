//! Block devices, mounts and the files that describe them: `/sys/block`,
//! `/proc/self/mountinfo`, udev's database, `/proc/<pid>` for the processes
//! holding a mount, and filesystem usage.

use std::path::{Path, PathBuf};

use super::{Host, HostError, SysEntry};

const BLOCK_DIR: &str = "/sys/block";

/// Attributes of a whole disk, relative to `/sys/block/<name>`.
const DISK_ATTRS: &[&str] = &[
    "size",
    "removable",
    "ro",
    "dev",
    "queue/rotational",
    "queue/read_ahead_kb",
    "queue/scheduler",
    "queue/logical_block_size",
    "queue/physical_block_size",
    "device/model",
    "device/vendor",
    "device/serial",
    "device/name",
    "device/wwid",
    "wwid",
    "serial",
    "loop/backing_file",
];

const PARTITION_ATTRS: &[&str] = &["partition", "size", "start", "dev", "ro"];

/// What sysfs says of one disk, uninterpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDisk {
    pub entry: SysEntry,
    /// Where the disk hangs in the device tree (the resolved `/sys/block`
    /// link), relative to the root: it tells USB from SATA from MMC.
    pub device_path: String,
    /// `speed` (Mbit/s) and `version` (USB spec, " 3.20") of the nearest
    /// USB device above the disk.
    pub usb_speed: Option<String>,
    pub usb_version: Option<String>,
    pub partitions: Vec<SysEntry>,
}

impl Host {
    pub fn block_devices(&self) -> Result<Vec<RawDisk>, HostError> {
        let mut disks = Vec::new();
        for entry in self.sys_entries(BLOCK_DIR, "", DISK_ATTRS)? {
            let link = self.resolve(&format!("{BLOCK_DIR}/{}", entry.name));
            // A device that vanished between the listing and here is gone.
            let Ok(real) = link.canonicalize() else {
                continue;
            };
            let device_path = real.strip_prefix(&self.root).map_or_else(
                |_| real.display().to_string(),
                |p| format!("/{}", p.display()),
            );
            let partitions = self
                .sys_entries(
                    &format!("{BLOCK_DIR}/{}", entry.name),
                    &entry.name,
                    PARTITION_ATTRS,
                )?
                .into_iter()
                .filter(|p| p.attrs.contains_key("partition"))
                .collect();
            let (usb_speed, usb_version) = usb_link_above(&real, &self.root);
            disks.push(RawDisk {
                usb_speed,
                usb_version,
                device_path,
                partitions,
                entry,
            });
        }
        Ok(disks)
    }

    /// Just the names in `/sys/block`: cheap enough to poll for hotplug.
    pub fn block_device_names(&self) -> Result<Vec<String>, HostError> {
        self.list_dir(BLOCK_DIR)
    }

    /// The device node's name as the system knows it (`/dev/sda1`), for
    /// display and for matching mountinfo's sources; not resolved under
    /// the root.
    pub fn device_node_name(name: &str) -> String {
        format!("/dev/{name}")
    }

    /// Devices stacked on a disk or partition (LVM, md RAID, dm-crypt).
    pub fn block_holders(&self, name: &str) -> Result<Vec<String>, HostError> {
        self.list_dir(&format!("/sys/class/block/{name}/holders"))
    }

    /// `major:minor` of a disk or partition now.
    pub fn block_dev_number(&self, name: &str) -> Result<Option<String>, HostError> {
        self.read_text(&format!("/sys/class/block/{name}/dev"))
    }

    /// Kernel names of the devices in use as swap.
    pub fn active_swaps(&self) -> Result<Vec<String>, HostError> {
        Ok(self
            .read_text("/proc/swaps")?
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next()?.rsplit('/').next())
            .map(str::to_owned)
            .collect())
    }

    /// `/dev/<name>` under the root, for programs to open.
    pub fn dev_path(&self, name: &str) -> PathBuf {
        self.resolve(&format!("/dev/{name}"))
    }

    pub fn mountinfo(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/self/mountinfo")
    }

    /// udev's record of a block device (`E:ID_SERIAL_SHORT=...` lines), by
    /// `major:minor`; absent where udev does not run.
    pub fn udev_block_data(&self, major_minor: &str) -> Result<Option<String>, HostError> {
        self.read_text(&format!("/run/udev/data/b{major_minor}"))
    }

    /// Filesystems the kernel can mount (`ntfs3`, `fuseblk`, ...).
    pub fn kernel_filesystems(&self) -> Result<Option<String>, HostError> {
        self.read_text("/proc/filesystems")
    }

    /// Processes whose working directory, root, executable or open files
    /// lie under `mountpoint`, as (pid, command name).
    pub fn processes_using(&self, mountpoint: &Path) -> Result<Vec<(u32, String)>, HostError> {
        let mut holders = Vec::new();
        for pid in self.list_dir("/proc")? {
            let Ok(pid_num) = pid.parse::<u32>() else {
                continue;
            };
            let dir = self.resolve(&format!("/proc/{pid}"));
            let mut links = vec![dir.join("cwd"), dir.join("root"), dir.join("exe")];
            // Processes come and go; an unreadable one is not holding it.
            if let Ok(fds) = std::fs::read_dir(dir.join("fd")) {
                links.extend(fds.flatten().map(|fd| fd.path()));
            }
            let holds = links.iter().any(|link| {
                std::fs::read_link(link)
                    .is_ok_and(|target| target.starts_with(mountpoint) && target != Path::new("/"))
            });
            if holds {
                let comm = self
                    .read_text(&format!("/proc/{pid}/comm"))?
                    .unwrap_or_default();
                holders.push((pid_num, comm));
            }
        }
        Ok(holders)
    }

    /// Used and total bytes of the filesystem mounted at `mountpoint`. This
    /// can block on a dead device, so callers run it off the async threads
    /// with a timeout.
    pub fn filesystem_usage(&self, mountpoint: &Path) -> Result<(u64, u64), HostError> {
        let path = self.resolve(&mountpoint.to_string_lossy());
        let stat = rustix::fs::statvfs(&path).map_err(|errno| HostError::Io {
            path: path.clone(),
            source: errno.into(),
        })?;
        let total = stat.f_blocks.saturating_mul(stat.f_frsize);
        let free = stat.f_bfree.saturating_mul(stat.f_frsize);
        Ok((total.saturating_sub(free), total))
    }

    /// Creates a mount point directory (and its parents).
    pub fn create_mountpoint(&self, mountpoint: &Path) -> Result<(), HostError> {
        let path = self.resolve(&mountpoint.to_string_lossy());
        std::fs::create_dir_all(&path).map_err(|source| HostError::Io { path, source })
    }

    /// Whether a directory holds anything (a missing one holds nothing).
    pub fn dir_has_entries(&self, dir: &Path) -> Result<bool, HostError> {
        let path = self.resolve(&dir.to_string_lossy());
        match std::fs::read_dir(&path) {
            Ok(mut entries) => Ok(entries.next().is_some()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(HostError::Io { path, source }),
        }
    }

    /// Removes an empty mount point directory; one that is not empty (files
    /// written while nothing was mounted) is left alone.
    pub fn remove_mountpoint(&self, mountpoint: &Path) {
        let _ = std::fs::remove_dir(self.resolve(&mountpoint.to_string_lossy()));
    }
}

/// Walks up from a disk's device directory to the USB device it hangs on
/// (named like `3-1` or `3-1.2`), which alone knows the negotiated link
/// speed and the USB version the device supports.
fn usb_link_above(device: &Path, root: &Path) -> (Option<String>, Option<String>) {
    let mut dir = device.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) {
            break;
        }
        let is_usb_device = d
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.contains('-') && !n.contains(':'));
        if is_usb_device && let Ok(speed) = std::fs::read_to_string(d.join("speed")) {
            let version = std::fs::read_to_string(d.join("version")).ok();
            return (
                Some(speed.trim().to_owned()),
                version.map(|v| v.trim().to_owned()),
            );
        }
        dir = d.parent();
    }
    (None, None)
}
