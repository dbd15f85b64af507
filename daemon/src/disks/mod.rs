//! Disks: what is plugged in, its health, formatting behind a wipe guard,
//! and mounts with the right options in an fstab that never blocks boot.
//!
//! Discovery reads sysfs, mountinfo and udev's database, and falls back to
//! `blkid` only where udev has no record. Everything that can block on a dead
//! device (blkid, statvfs, smartctl, umount) runs with a timeout.

pub mod fstab;
pub mod hotplug;
mod ops;
pub mod options;
pub mod parse;
pub mod power;
pub mod smart;
pub mod text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::host::block::RawDisk;
use crate::host::runner::{RunError, Runner};
use crate::host::{Host, HostError, SysEntry};
use crate::store::{Store, StoreError, StoredMount};
use crate::validate::Invalid;
use parse::{MountEntry, Transport};
use power::PowerSettings;

pub use ops::{FormatRequest, MountOutcome, MountRequest};

/// Mounts that hold the running system: their disks are never formatted.
const SYSTEM_MOUNTS: &[&str] = &["/", "/boot", "/boot/firmware", "/boot/efi", "/usr", "/var"];
/// How long statvfs may take before a mount is reported without usage.
const USAGE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long blkid may take to read a device's signatures.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("no disk or partition named '{0}'")]
    NotFound(String),
    #[error("{0} holds the running system and is never formatted or unmounted by nasd")]
    System(String),
    #[error("{name} is mounted at {mountpoint}; unmount it first")]
    Mounted { name: String, mountpoint: String },
    #[error(
        "{name} carries {found}; formatting erases it. Repeat the disk's {identity_kind} as confirmation"
    )]
    NeedsConfirmation {
        name: String,
        found: String,
        identity_kind: &'static str,
    },
    #[error("{name} is in use as {by}; nasd will not erase it")]
    InUse { name: String, by: String },
    #[error("{0} has no filesystem to mount; format it first")]
    NoFilesystem(String),
    #[error("{mountpoint} is busy: used by {holders}; close them or unmount with force")]
    Busy { mountpoint: String, holders: String },
    #[error("{0}")]
    NotSupported(String),
    #[error("{0}")]
    Verify(String),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Filesystem {
    #[serde(rename = "type")]
    pub fs_type: String,
    pub uuid: Option<String>,
    pub label: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub used_bytes: u64,
    pub total_bytes: u64,
}

/// What a disk and a partition share: something that can hold a filesystem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Volume {
    pub name: String,
    pub path: String,
    pub size_bytes: u64,
    pub fs: Option<Filesystem>,
    pub mountpoint: Option<String>,
    pub mount_options: Vec<String>,
    pub usage: Option<Usage>,
    #[serde(skip)]
    pub major_minor: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Partition {
    #[serde(flatten)]
    pub volume: Volume,
    pub number: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disk {
    #[serde(flatten)]
    pub volume: Volume,
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub transport: Transport,
    pub rotational: bool,
    pub removable: bool,
    pub read_only: bool,
    pub logical_block_size: Option<u64>,
    pub physical_block_size: Option<u64>,
    pub usb_speed_mbps: Option<u64>,
    /// A USB 3 disk running at USB 2 speed.
    pub usb_degraded: bool,
    /// Holds the running system (the SD card on the board).
    pub system: bool,
    /// For loop devices: the file behind it.
    pub backing_file: Option<String>,
    pub partition_table: Option<String>,
    pub partitions: Vec<Partition>,
    pub power: Option<PowerSettings>,
}

impl Disk {
    /// What a format request must repeat to erase this disk, and its name.
    pub fn identity(&self) -> (Option<&str>, &'static str) {
        match self.transport {
            Transport::Loop => (self.backing_file.as_deref(), "backing file path"),
            _ => (self.serial.as_deref(), "serial number"),
        }
    }

    fn volumes(&self) -> impl Iterator<Item = &Volume> {
        std::iter::once(&self.volume).chain(self.partitions.iter().map(|p| &p.volume))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct DiskList {
    pub disks: Vec<Disk>,
    /// Mounts nasd manages whose filesystem is not present now (a disk that
    /// was unplugged or died).
    pub missing_mounts: Vec<StoredMount>,
}

pub struct Disks {
    host: Host,
    runner: Runner,
    store: Arc<Store>,
    mount_base: PathBuf,
    /// Formats, mounts and unmounts run one at a time.
    changes: tokio::sync::Mutex<()>,
    /// Mount points whose statvfs has not returned: a dead disk's mount can
    /// block it for good, and one stuck thread per mount is the most that
    /// is spent on it.
    stat_in_flight: Arc<InFlight>,
}

type InFlight = std::sync::Mutex<std::collections::HashSet<String>>;

fn lock_set(set: &InFlight) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
    // The set stays valid whatever panicked while holding it.
    set.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kernel devices that are not disks a user plugs in.
fn ignored(name: &str) -> bool {
    name.starts_with("ram")
        || name.starts_with("zram")
        || name.starts_with("mtdblock")
        || (name.starts_with("mmcblk") && (name.contains("boot") || name.contains("rpmb")))
}

fn number(entry: &SysEntry, attr: &str) -> Option<u64> {
    entry.attr(attr)?.trim().parse().ok()
}

fn text(entry: &SysEntry, attr: &str) -> Option<String> {
    entry
        .attr(attr)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

impl Disks {
    pub fn new(host: Host, runner: Runner, store: Arc<Store>, mount_base: PathBuf) -> Self {
        Self {
            host,
            runner,
            store,
            mount_base,
            changes: tokio::sync::Mutex::new(()),
            stat_in_flight: Arc::default(),
        }
    }

    /// Every disk with its partitions, filesystems, mounts and usage.
    pub async fn list(&self) -> Result<DiskList, DiskError> {
        let host = self.host.clone();
        let (raw, mounts) = tokio::task::spawn_blocking(move || {
            let mounts = host
                .mountinfo()?
                .map(|t| parse::mountinfo(&t))
                .unwrap_or_default();
            Ok::<_, HostError>((host.block_devices()?, mounts))
        })
        .await
        .map_err(|e| DiskError::Verify(e.to_string()))??;
        let system_devices: Vec<&str> = mounts
            .iter()
            .filter(|m| SYSTEM_MOUNTS.contains(&m.mountpoint.as_str()))
            .map(|m| m.major_minor.as_str())
            .collect();
        let mut disks = Vec::new();
        for raw in raw.iter().filter(|r| !ignored(&r.entry.name)) {
            if let Some(disk) = self.disk(raw, &mounts, &system_devices).await? {
                disks.push(disk);
            }
        }
        let present: Vec<&str> = disks
            .iter()
            .flat_map(Disk::volumes)
            .filter_map(|v| v.fs.as_ref()?.uuid.as_deref())
            .collect();
        let missing_mounts = self
            .store
            .mounts()?
            .into_iter()
            .filter(|m| !present.contains(&m.uuid.as_str()))
            .collect();
        Ok(DiskList {
            disks,
            missing_mounts,
        })
    }

    async fn disk(
        &self,
        raw: &RawDisk,
        mounts: &[MountEntry],
        system_devices: &[&str],
    ) -> Result<Option<Disk>, DiskError> {
        let e = &raw.entry;
        let transport = parse::transport(&e.name, &raw.device_path);
        let backing_file = text(e, "loop/backing_file");
        // An unattached loop device is an empty slot, not a disk.
        if transport == Transport::Loop && backing_file.is_none() {
            return Ok(None);
        }
        let major_minor = text(e, "dev").unwrap_or_default();
        let udev = self.udev(&major_minor)?;
        let mut partitions = Vec::new();
        for p in &raw.partitions {
            let (volume, _) = self
                .volume(&p.name, number(p, "size"), text(p, "dev"), mounts)
                .await?;
            partitions.push(Partition {
                number: number(p, "partition").unwrap_or(0) as u32,
                volume,
            });
        }
        partitions.sort_by_key(|p| p.number);
        let (volume, partition_table) = self
            .volume(
                &e.name,
                number(e, "size"),
                Some(major_minor.clone()),
                mounts,
            )
            .await?;
        // By device number, and by mount point for filesystems whose
        // mountinfo number is not the disk's (btrfs, FUSE).
        let system = std::iter::once(&volume)
            .chain(partitions.iter().map(|p| &p.volume))
            .any(|v| {
                system_devices.contains(&v.major_minor.as_str())
                    || v.mountpoint
                        .as_deref()
                        .is_some_and(|m| SYSTEM_MOUNTS.contains(&m))
            });
        let usb_speed_mbps = raw.usb_speed.as_deref().and_then(parse::usb_speed_mbps);
        let serial = udev
            .get("ID_SERIAL_SHORT")
            .cloned()
            .or_else(|| text(e, "device/serial"))
            .or_else(|| text(e, "serial"));
        let mut disk = Disk {
            model: udev
                .get("ID_MODEL")
                .map(|m| m.replace('_', " "))
                .or_else(|| text(e, "device/model"))
                // SD and eMMC cards name themselves here.
                .or_else(|| text(e, "device/name")),
            vendor: text(e, "device/vendor"),
            wwn: udev
                .get("ID_WWN")
                .cloned()
                .or_else(|| text(e, "wwid"))
                .or_else(|| text(e, "device/wwid")),
            serial,
            transport,
            rotational: number(e, "queue/rotational") == Some(1),
            removable: number(e, "removable") == Some(1),
            read_only: number(e, "ro") == Some(1),
            logical_block_size: number(e, "queue/logical_block_size"),
            physical_block_size: number(e, "queue/physical_block_size"),
            usb_degraded: parse::usb_degraded(raw.usb_version.as_deref(), usb_speed_mbps),
            usb_speed_mbps,
            system,
            backing_file,
            partition_table,
            partitions,
            power: None,
            volume,
        };
        if let (Some(identity), _) = disk.identity() {
            disk.power = self.store.disk_power(identity)?;
        }
        Ok(Some(disk))
    }

    /// A disk or partition, and the partition table type found on it.
    async fn volume(
        &self,
        name: &str,
        sectors: Option<u64>,
        major_minor: Option<String>,
        mounts: &[MountEntry],
    ) -> Result<(Volume, Option<String>), DiskError> {
        let major_minor = major_minor.unwrap_or_default();
        let path = Host::device_node_name(name);
        // FUSE filesystems (ntfs-3g) show their own device number in
        // mountinfo, so match the source path too.
        let mount = mounts
            .iter()
            .find(|m| m.major_minor == major_minor || m.source == path);
        let signatures = self.signatures(name, &major_minor).await?;
        let mut fs = signatures
            .get("TYPE")
            .filter(|t| !t.is_empty())
            .map(|fs_type| Filesystem {
                fs_type: fs_type.clone(),
                uuid: signatures.get("UUID").cloned(),
                label: signatures.get("LABEL").cloned(),
            });
        if let (None, Some(m)) = (&fs, mount) {
            fs = Some(Filesystem {
                fs_type: m.fs_type.clone(),
                uuid: None,
                label: None,
            });
        }
        let usage = match mount {
            Some(m) => self.usage(&m.mountpoint).await,
            None => None,
        };
        let volume = Volume {
            name: name.to_owned(),
            path,
            // sysfs counts 512-byte sectors whatever the disk's block size.
            size_bytes: sectors.unwrap_or(0).saturating_mul(512),
            fs,
            mountpoint: mount.map(|m| m.mountpoint.clone()),
            mount_options: mount.map(|m| m.options.clone()).unwrap_or_default(),
            usage,
            major_minor,
        };
        Ok((volume, signatures.get("PTTYPE").cloned()))
    }

    fn udev(&self, major_minor: &str) -> Result<BTreeMap<String, String>, DiskError> {
        Ok(self
            .host
            .udev_block_data(major_minor)?
            .map(|t| parse::udev_properties(&t))
            .unwrap_or_default())
    }

    /// Filesystem type, UUID, label and partition table type, in blkid's
    /// names: udev's record where udev runs, else blkid (which reads the
    /// device).
    async fn signatures(
        &self,
        name: &str,
        major_minor: &str,
    ) -> Result<BTreeMap<String, String>, DiskError> {
        let udev = self.udev(major_minor)?;
        if udev.is_empty() {
            return Ok(self.probe(name).await);
        }
        const UDEV_NAMES: [(&str, &str); 4] = [
            ("TYPE", "ID_FS_TYPE"),
            ("UUID", "ID_FS_UUID"),
            ("LABEL", "ID_FS_LABEL"),
            ("PTTYPE", "ID_PART_TABLE_TYPE"),
        ];
        Ok(UDEV_NAMES
            .into_iter()
            .filter_map(|(k, u)| Some((k.to_owned(), udev.get(u)?.clone())))
            .collect())
    }

    /// `blkid -p` for listing: a device that cannot be read shows no
    /// signatures here (the format guard probes again and refuses instead).
    async fn probe(&self, name: &str) -> BTreeMap<String, String> {
        self.probe_strict(name).await.unwrap_or_else(|err| {
            tracing::debug!("{err}");
            BTreeMap::new()
        })
    }

    /// `blkid -p`: signatures on the device itself, bypassing blkid's cache
    /// and udev's record. Only blkid's "nothing found" (exit 2) is empty;
    /// ambiguous signatures (exit 8), a timeout or a missing blkid are
    /// errors, because to the format guard "unknown" must not mean "empty".
    pub(crate) async fn probe_strict(
        &self,
        name: &str,
    ) -> Result<BTreeMap<String, String>, DiskError> {
        let device = self.host.dev_path(name);
        let args = [
            "-p".as_ref(),
            "-o".as_ref(),
            "export".as_ref(),
            device.as_os_str(),
        ];
        let probe = Runner::with_timeout(PROBE_TIMEOUT);
        let out = probe.run_unchecked("blkid", &args, None).await?;
        match out.code {
            Some(0) => Ok(parse::blkid_export(&out.stdout)),
            Some(2) => Ok(BTreeMap::new()),
            code => Err(DiskError::Verify(format!(
                "cannot tell what is on {name}: blkid exited {code:?}: {}",
                out.stderr
            ))),
        }
    }

    async fn usage(&self, mountpoint: &str) -> Option<Usage> {
        // A fixture tree's mounts have no filesystem behind them to measure.
        if !self.host.is_live() {
            return None;
        }
        let in_flight = self.stat_in_flight.clone();
        if !lock_set(&in_flight).insert(mountpoint.to_owned()) {
            return None;
        }
        let host = self.host.clone();
        let key = mountpoint.to_owned();
        let stat = tokio::task::spawn_blocking(move || {
            let usage = host.filesystem_usage(Path::new(&key));
            lock_set(&in_flight).remove(&key);
            usage
        });
        match tokio::time::timeout(USAGE_TIMEOUT, stat).await {
            Ok(Ok(Ok((used_bytes, total_bytes)))) => Some(Usage {
                used_bytes,
                total_bytes,
            }),
            _ => None,
        }
    }
}
