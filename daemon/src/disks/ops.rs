//! Changes to disks: format, mount, unmount, power. Each checks everything
//! before it touches anything, and a mount that cannot be made persistent is
//! undone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::fstab::{self, FstabEntry};
use super::options::{self, MountPlan, NtfsDriver};
use super::parse::{self, Transport};
use super::power::{self, PowerSettings};
use super::smart::{self, SmartReport};
use super::{Disk, DiskError, Disks, Volume};
use crate::host::runner::Runner;
use crate::store::StoredMount;
use crate::validate::Invalid;

#[derive(Debug, Clone, Deserialize)]
pub struct FormatRequest {
    pub fs: String,
    pub label: String,
    /// The disk's serial number (a loop device's backing file), required
    /// when the device carries any signature.
    #[serde(default)]
    pub confirm: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct MountRequest {
    #[serde(default)]
    pub options: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MountOutcome {
    pub changed: bool,
    pub mountpoint: String,
    pub plan: MountPlan,
}

/// A disk or one of its partitions, found by kernel name.
struct Target<'a> {
    disk: &'a Disk,
    volume: &'a Volume,
    whole_disk: bool,
}

/// Filesystems nasd formats, with their label limits: the mkfs program and
/// its arguments before the device.
fn mkfs(fs: &str, label: &str) -> Result<(&'static str, Vec<String>), Invalid> {
    let (program, max_label, args): (&str, usize, Vec<&str>) = match fs {
        "ext4" => ("mkfs.ext4", 16, vec!["-F", "-q", "-L", label]),
        "xfs" => ("mkfs.xfs", 12, vec!["-f", "-q", "-L", label]),
        "btrfs" => ("mkfs.btrfs", 255, vec!["-f", "-q", "-L", label]),
        "ntfs" => ("mkfs.ntfs", 128, vec!["-F", "-Q", "-q", "-L", label]),
        "exfat" => ("mkfs.exfat", 15, vec!["-L", label]),
        "vfat" => ("mkfs.vfat", 11, vec!["-n", label]),
        _ => {
            return Err(Invalid::new(
                "fs",
                "must be one of ext4, xfs, btrfs, ntfs, exfat, vfat",
            ));
        }
    };
    let label_ok = !label.is_empty()
        && label.len() <= max_label
        && !label.starts_with('-')
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !label_ok {
        return Err(Invalid::new(
            "label",
            format!(
                "must be 1 to {max_label} characters for {fs}: letters, digits, '_' or '-', not starting with '-'"
            ),
        ));
    }
    Ok((program, args.into_iter().map(str::to_owned).collect()))
}

/// GPT partition type for one data partition holding `fs`.
fn partition_type(fs: &str) -> &'static str {
    match fs {
        // Microsoft basic data, so Windows and macOS see the partition.
        "ntfs" | "exfat" | "vfat" => "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7",
        _ => "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
    }
}

/// Kernel name of partition 1 of `disk` (`sda1`, `mmcblk0p1`, `nvme0n1p1`).
fn first_partition(disk: &str) -> String {
    if disk.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{disk}p1")
    } else {
        format!("{disk}1")
    }
}

/// For wipefs, sfdisk and mkfs: a large disk takes minutes (discarding an
/// SSD, btrfs and xfs on big drives), and killing one midway is the worst
/// outcome, so the limit only catches a tool that hangs for good.
fn destructive() -> Runner {
    Runner::with_timeout(Duration::from_secs(30 * 60))
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The directory name for a filesystem: its label when that is a safe path
/// segment, else its UUID.
fn mount_name(label: Option<&str>, uuid: &str) -> String {
    match label {
        Some(l)
            if !l.is_empty()
                && l.len() <= 64
                && !l.starts_with(['.', '-'])
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) =>
        {
            l.to_owned()
        }
        _ => uuid.to_owned(),
    }
}

fn find<'a>(disks: &'a [Disk], name: &str) -> Result<Target<'a>, DiskError> {
    for disk in disks {
        if disk.volume.name == name {
            return Ok(Target {
                disk,
                volume: &disk.volume,
                whole_disk: true,
            });
        }
        if let Some(p) = disk.partitions.iter().find(|p| p.volume.name == name) {
            return Ok(Target {
                disk,
                volume: &p.volume,
                whole_disk: false,
            });
        }
    }
    Err(DiskError::NotFound(name.to_owned()))
}

impl Disks {
    fn ntfs_driver(&self) -> Result<Option<NtfsDriver>, DiskError> {
        if self.runner.is_installed("mount.ntfs-3g") || self.runner.is_installed("ntfs-3g") {
            return Ok(Some(NtfsDriver::Ntfs3g));
        }
        let kernel = self.host.kernel_filesystems()?.unwrap_or_default();
        Ok(kernel
            .lines()
            .any(|l| l.split_whitespace().last() == Some("ntfs3"))
            .then_some(NtfsDriver::Ntfs3))
    }

    /// Erases `name` and makes one filesystem on it: a whole disk gets a GPT
    /// with one partition; a loop device or a partition gets it directly.
    pub async fn format(&self, name: &str, req: &FormatRequest) -> Result<Volume, DiskError> {
        // Validate before looking at the disk: a bad request changes nothing.
        let (program, mut mkfs_args) = mkfs(&req.fs, &req.label)?;
        if !self.runner.is_installed(program) {
            return Err(DiskError::NotSupported(format!(
                "{program} is not installed, so {} cannot be made here",
                req.fs
            )));
        }
        let _one_at_a_time = self.changes.lock().await;
        let list = self.list().await?;
        let target = find(&list.disks, name)?;
        if target.disk.system {
            return Err(DiskError::System(name.to_owned()));
        }
        for v in target.disk.volumes() {
            let under_target = target.whole_disk || v.name == name;
            if let (true, Some(mountpoint)) = (under_target, &v.mountpoint) {
                return Err(DiskError::Mounted {
                    name: v.name.clone(),
                    mountpoint: mountpoint.clone(),
                });
            }
        }
        let under: Vec<&Volume> = if target.whole_disk {
            target.disk.volumes().collect()
        } else {
            vec![target.volume]
        };
        let swaps = self.host.active_swaps()?;
        for v in &under {
            let holders = self.host.block_holders(&v.name)?;
            if !holders.is_empty() {
                return Err(DiskError::InUse {
                    name: v.name.clone(),
                    by: format!("part of {} (LVM, RAID or encryption)", holders.join(", ")),
                });
            }
            if swaps.contains(&v.name) {
                return Err(DiskError::InUse {
                    name: v.name.clone(),
                    by: "active swap".into(),
                });
            }
        }
        // Read the signatures afresh, from the device itself: what the
        // listing showed may be udev's stale record, and a device that
        // cannot be read must not pass for an empty one.
        let mut found = Vec::new();
        for v in &under {
            let signatures = self.probe_strict(&v.name).await?;
            let fs_type = signatures.get("TYPE").or(v.fs.as_ref().map(|f| &f.fs_type));
            if let Some(fs) = fs_type {
                found.push(format!("{fs} filesystem on {}", v.name));
            }
            if let Some(table) = signatures.get("PTTYPE") {
                found.push(format!("{table} partition table on {}", v.name));
            }
        }
        if target.whole_disk && !target.disk.partitions.is_empty() {
            found.push(format!("{} partition(s)", target.disk.partitions.len()));
        }
        let (identity, identity_kind) = target.disk.identity();
        if !found.is_empty() {
            let confirmed = matches!((identity, req.confirm.as_deref()), (Some(id), Some(given)) if id == given.trim());
            if !confirmed {
                return Err(DiskError::NeedsConfirmation {
                    name: name.to_owned(),
                    found: found.join(", "),
                    identity_kind,
                });
            }
        }
        // The name must still be the device that was checked.
        if self.host.block_dev_number(name)?.as_deref() != Some(target.volume.major_minor.as_str())
        {
            return Err(DiskError::Verify(format!(
                "{name} changed while it was being checked; try again"
            )));
        }
        let old_uuids: Vec<String> = under
            .iter()
            .filter_map(|v| v.fs.as_ref()?.uuid.clone())
            .collect();
        let device = self.host.dev_path(name);
        destructive()
            .run("wipefs", &["-a".as_ref(), device.as_os_str()])
            .await?;
        let fs_device = if target.whole_disk && target.disk.transport != Transport::Loop {
            let script = format!("label: gpt\n,,{}\n", partition_type(&req.fs));
            destructive()
                .run_with_input(
                    "sfdisk",
                    &[
                        "--quiet".as_ref(),
                        "--wipe".as_ref(),
                        "always".as_ref(),
                        device.as_os_str(),
                    ],
                    &script,
                )
                .await?;
            let partition = first_partition(name);
            self.wait_for_device(&partition).await?;
            partition
        } else {
            name.to_owned()
        };
        mkfs_args.push(
            self.host
                .dev_path(&fs_device)
                .to_string_lossy()
                .into_owned(),
        );
        destructive().run(program, &mkfs_args).await?;
        tracing::info!(device = %fs_device, fs = %req.fs, label = %req.label, "formatted");
        self.settle().await;
        // The erased filesystems are gone for good: so are their mounts.
        let stored = self.store.mounts()?;
        if stored.iter().any(|m| old_uuids.contains(&m.uuid)) {
            let wanted: Vec<StoredMount> = stored
                .into_iter()
                .filter(|m| !old_uuids.contains(&m.uuid))
                .collect();
            self.write_fstab(&wanted)?;
            for uuid in &old_uuids {
                self.store.delete_mount(uuid)?;
            }
        }
        let list = self.list().await?;
        Ok(find(&list.disks, &fs_device)?.volume.clone())
    }

    /// Lets udev finish re-reading devices nasd just changed, so that its
    /// records (which discovery trusts) are current.
    async fn settle(&self) {
        if self.runner.is_installed("udevadm") {
            let _ = self
                .runner
                .run("udevadm", &["settle", "--timeout=10"])
                .await;
        }
    }

    async fn wait_for_device(&self, name: &str) -> Result<(), DiskError> {
        self.settle().await;
        for _ in 0..50 {
            if self.host.dev_path(name).exists() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(DiskError::Verify(format!(
            "partition {name} did not appear"
        )))
    }

    /// The options `name` would be mounted with, and where.
    pub async fn mount_preview(
        &self,
        name: &str,
        req: &MountRequest,
    ) -> Result<MountOutcome, DiskError> {
        let list = self.list().await?;
        let target = find(&list.disks, name)?;
        let (plan, mountpoint, _) = self.plan_mount(&list.disks, &target, req)?;
        Ok(MountOutcome {
            changed: target.volume.mountpoint.as_deref() != Some(mountpoint.as_str()),
            mountpoint,
            plan,
        })
    }

    fn plan_mount(
        &self,
        disks: &[Disk],
        target: &Target<'_>,
        req: &MountRequest,
    ) -> Result<(MountPlan, String, String), DiskError> {
        let name = &target.volume.name;
        if target.disk.system {
            return Err(DiskError::System(name.clone()));
        }
        let fs = target
            .volume
            .fs
            .as_ref()
            .filter(|fs| fs.uuid.is_some())
            .ok_or_else(|| DiskError::NoFilesystem(name.clone()))?;
        let uuid = fs.uuid.clone().unwrap_or_default();
        // fstab mounts by UUID: two filesystems with one UUID (a cloned
        // disk) would mount whichever the kernel finds first.
        let twins: Vec<&str> = disks
            .iter()
            .flat_map(Disk::volumes)
            .filter(|v| {
                v.name != *name && v.fs.as_ref().and_then(|f| f.uuid.as_deref()) == Some(&uuid)
            })
            .map(|v| v.name.as_str())
            .collect();
        if !twins.is_empty() {
            return Err(DiskError::NotSupported(format!(
                "{name} has the same filesystem UUID as {} (a cloned disk?); give one a new UUID first",
                twins.join(", ")
            )));
        }
        let plan = options::plan(&fs.fs_type, self.ntfs_driver()?, &req.options)?;
        let stored = self.store.mounts()?;
        if let Some(mine) = stored.iter().find(|m| m.uuid == uuid) {
            return Ok((plan, mine.mountpoint.clone(), uuid));
        }
        let base = self
            .mount_base
            .to_string_lossy()
            .trim_end_matches('/')
            .to_owned();
        let mut mountpoint = format!("{base}/{}", mount_name(fs.label.as_deref(), &uuid));
        if stored.iter().any(|m| m.mountpoint == mountpoint) {
            mountpoint = format!("{mountpoint}-{}", uuid.chars().take(8).collect::<String>());
        }
        Ok((plan, mountpoint, uuid))
    }

    /// The fstab text with nasd's block holding `mounts`, spliced into the
    /// file as it is now (so edits made meanwhile by others are kept).
    fn render_fstab(&self, mounts: &[StoredMount]) -> Result<String, DiskError> {
        let existing = self.host.read_etc("fstab")?.unwrap_or_default();
        let entries: Vec<FstabEntry> = mounts
            .iter()
            .map(|m| FstabEntry {
                uuid: m.uuid.clone(),
                mountpoint: m.mountpoint.clone(),
                mount_type: m.mount_type.clone(),
                options: m.options.clone(),
            })
            .collect();
        Ok(fstab::splice(&existing, &entries)?)
    }

    fn write_fstab(&self, mounts: &[StoredMount]) -> Result<(), DiskError> {
        let rendered = self.render_fstab(mounts)?;
        Ok(self.host.write_etc_atomic("fstab", &rendered)?)
    }

    /// Refuses a mount point that something else uses: mounted already, or
    /// a directory with files in it (they would be hidden under the mount).
    async fn check_mountpoint_free(&self, mountpoint: &str) -> Result<(), DiskError> {
        let mounts = self
            .host
            .mountinfo()?
            .map(|t| parse::mountinfo(&t))
            .unwrap_or_default();
        if mounts.iter().any(|m| m.mountpoint == mountpoint) {
            return Err(DiskError::NotSupported(format!(
                "{mountpoint} is already a mount point"
            )));
        }
        let host = self.host.clone();
        let path = PathBuf::from(mountpoint);
        let check = tokio::task::spawn_blocking(move || host.dir_has_entries(&path));
        match tokio::time::timeout(Duration::from_secs(5), check).await {
            Ok(Ok(Ok(false))) => Ok(()),
            Ok(Ok(Ok(true))) => Err(DiskError::NotSupported(format!(
                "{mountpoint} is not empty; its files would be hidden by the mount"
            ))),
            Ok(Ok(Err(err))) => Err(err.into()),
            _ => Err(DiskError::Verify(format!("{mountpoint} does not answer"))),
        }
    }

    /// Mounts `name` with nasd's options and records it in fstab. A second
    /// identical request changes nothing.
    pub async fn mount(&self, name: &str, req: &MountRequest) -> Result<MountOutcome, DiskError> {
        let _one_at_a_time = self.changes.lock().await;
        let list = self.list().await?;
        let target = find(&list.disks, name)?;
        let (plan, mountpoint, uuid) = self.plan_mount(&list.disks, &target, req)?;
        let record = StoredMount {
            uuid: uuid.clone(),
            mountpoint: mountpoint.clone(),
            mount_type: plan.mount_type.clone(),
            options: plan.option_string(),
            device: name.to_owned(),
        };
        let stored = self.store.mounts()?;
        let recorded = stored.iter().find(|m| m.uuid == uuid);
        if let Some(current) = target.volume.mountpoint.as_deref() {
            let same_options = recorded.is_some_and(|m| m.options == record.options);
            if current == mountpoint && same_options {
                if recorded != Some(&record) {
                    // Only the device name moved (another port): note it.
                    self.store.put_mount(&record, now())?;
                }
                return Ok(MountOutcome {
                    changed: false,
                    mountpoint,
                    plan,
                });
            }
            // Other options, or another place: changing a live mount would
            // record what is not in force, so unmount first.
            return Err(DiskError::Mounted {
                name: name.to_owned(),
                mountpoint: current.to_owned(),
            });
        }
        let mut wanted: Vec<StoredMount> =
            stored.iter().filter(|m| m.uuid != uuid).cloned().collect();
        wanted.push(record.clone());
        // Render first: a bad entry or a damaged fstab is refused before
        // anything is mounted.
        self.render_fstab(&wanted)?;
        self.check_mountpoint_free(&mountpoint).await?;
        self.host.create_mountpoint(Path::new(&mountpoint))?;
        let device = self.host.dev_path(name);
        let mounted = self
            .runner
            .run(
                "mount",
                &[
                    "-t".as_ref(),
                    plan.mount_type.as_ref(),
                    "-o".as_ref(),
                    record.options.as_ref(),
                    device.as_os_str(),
                    mountpoint.as_ref(),
                ],
            )
            .await;
        if let Err(err) = mounted {
            self.host.remove_mountpoint(Path::new(&mountpoint));
            return Err(err.into());
        }
        let persisted = self
            .verify_mount(&mountpoint)
            .and_then(|()| self.write_fstab(&wanted))
            .and_then(|()| Ok(self.store.put_mount(&record, now())?));
        if let Err(err) = persisted {
            // Undo: fstab back to the recorded mounts (re-spliced, so other
            // edits stay), then the mount itself.
            let mut undo_failed = Vec::new();
            if let Err(e) = self.write_fstab(&stored) {
                undo_failed.push(format!("fstab: {e}"));
            }
            if let Err(e) = self.runner.run("umount", &[mountpoint.as_str()]).await {
                undo_failed.push(format!("umount: {e}"));
            }
            self.host.remove_mountpoint(Path::new(&mountpoint));
            if undo_failed.is_empty() {
                tracing::error!("mount of {name} undone: {err}");
                return Err(err);
            }
            return Err(DiskError::Verify(format!(
                "{err}; undoing it also failed: {}",
                undo_failed.join("; ")
            )));
        }
        tracing::info!(device = %name, %mountpoint, options = %record.options, "mounted");
        Ok(MountOutcome {
            changed: true,
            mountpoint,
            plan,
        })
    }

    fn verify_mount(&self, mountpoint: &str) -> Result<(), DiskError> {
        let mounts = self
            .host
            .mountinfo()?
            .map(|t| parse::mountinfo(&t))
            .unwrap_or_default();
        match mounts.iter().rev().find(|m| m.mountpoint == mountpoint) {
            Some(m) if m.options.iter().any(|o| o == "noatime") => Ok(()),
            Some(m) => Err(DiskError::Verify(format!(
                "{mountpoint} is mounted without noatime ({})",
                m.options.join(",")
            ))),
            None => Err(DiskError::Verify(format!(
                "{mountpoint} is not mounted after mount"
            ))),
        }
    }

    /// Unmounts `name` (a device, or a managed mount's UUID or mount point
    /// when its disk is gone) and removes it from fstab. A busy filesystem
    /// is refused with the processes that hold it, unless `force`.
    pub async fn unmount(&self, name: &str, force: bool) -> Result<bool, DiskError> {
        let _one_at_a_time = self.changes.lock().await;
        let list = self.list().await?;
        let stored = self.store.mounts()?;
        let (uuid, mountpoint) = match find(&list.disks, name) {
            Ok(target) if target.disk.system => return Err(DiskError::System(name.to_owned())),
            Ok(target) => {
                let uuid = target.volume.fs.as_ref().and_then(|f| f.uuid.clone());
                let recorded = stored.iter().find(|m| Some(&m.uuid) == uuid.as_ref());
                let mountpoint = target
                    .volume
                    .mountpoint
                    .clone()
                    .or_else(|| recorded.map(|m| m.mountpoint.clone()));
                (uuid, mountpoint)
            }
            Err(not_found) => match stored
                .iter()
                .find(|m| m.uuid == name || m.mountpoint == name || m.device == name)
            {
                Some(m) => (Some(m.uuid.clone()), Some(m.mountpoint.clone())),
                None => return Err(not_found),
            },
        };
        let mounted = self
            .host
            .mountinfo()?
            .map(|t| parse::mountinfo(&t))
            .unwrap_or_default();
        let is_mounted = mountpoint
            .as_deref()
            .is_some_and(|mp| mounted.iter().any(|m| m.mountpoint == mp));
        let recorded = uuid
            .as_ref()
            .is_some_and(|u| stored.iter().any(|m| &m.uuid == u));
        if !is_mounted && !recorded {
            return Ok(false);
        }
        if let (true, Some(mp)) = (is_mounted, mountpoint.as_deref()) {
            let holders = self.host.processes_using(Path::new(mp))?;
            if !holders.is_empty() && !force {
                let names: Vec<String> = holders
                    .iter()
                    .map(|(pid, comm)| format!("{comm} (pid {pid})"))
                    .collect();
                return Err(DiskError::Busy {
                    mountpoint: mp.to_owned(),
                    holders: names.join(", "),
                });
            }
            // Forced: detach now, let the kernel finish when the holders let go.
            let args: Vec<&str> = if force { vec!["-l", mp] } else { vec![mp] };
            self.runner.run("umount", &args).await?;
        }
        if let Some(uuid) = &uuid {
            let wanted: Vec<StoredMount> = stored.into_iter().filter(|m| &m.uuid != uuid).collect();
            self.write_fstab(&wanted)?;
            self.store.delete_mount(uuid)?;
        }
        if let Some(mp) = &mountpoint {
            self.host.remove_mountpoint(Path::new(mp));
            tracing::info!(mountpoint = %mp, force, "unmounted");
        }
        Ok(true)
    }

    /// smartctl's arguments for a disk (`-d` where its transport needs
    /// it), or why it has no SMART.
    fn smart_device(&self, disk: &Disk) -> Result<Vec<std::ffi::OsString>, String> {
        let Some(device_type) = smart::device_type(disk.transport) else {
            return Err(format!(
                "{} devices have no SMART",
                serde_json::to_value(disk.transport)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ));
        };
        let mut args = Vec::new();
        if let Some(kind) = device_type {
            args.extend(["-d".into(), kind.into()]);
        }
        args.push(self.host.dev_path(&disk.volume.name).into_os_string());
        Ok(args)
    }

    /// SMART health without waking a sleeping disk.
    pub async fn smart(&self, name: &str) -> Result<SmartReport, DiskError> {
        let list = self.list().await?;
        let target = find(&list.disks, name)?;
        let device = match self.smart_device(target.disk) {
            Ok(device) => device,
            Err(why) => return Ok(SmartReport::unsupported(why)),
        };
        // -n standby: a sleeping disk stays asleep; smartctl says so instead.
        let mut args: Vec<std::ffi::OsString> =
            ["--json", "-a", "-n", "standby"].map(Into::into).into();
        args.extend(device);
        let out = self.runner.run_unchecked("smartctl", &args, None).await?;
        smart::parse(&out.stdout, out.code).map_err(|err| {
            DiskError::Verify(format!("smartctl printed no JSON ({err}): {}", out.stderr))
        })
    }

    /// Starts a drive's own self-test (`short` or `long`); the drive runs
    /// it in the background and `smart` shows its progress and result.
    pub async fn start_self_test(&self, name: &str, long: bool) -> Result<(), DiskError> {
        self.self_test_command(name, if long { "long" } else { "short" })
            .await
    }

    /// Stops a running self-test.
    pub async fn abort_self_test(&self, name: &str) -> Result<(), DiskError> {
        self.self_test_command(name, "abort").await
    }

    async fn self_test_command(&self, name: &str, what: &str) -> Result<(), DiskError> {
        let list = self.list().await?;
        let target = find(&list.disks, name)?;
        let device = self
            .smart_device(target.disk)
            .map_err(DiskError::NotSupported)?;
        let mut args: Vec<std::ffi::OsString> = match what {
            "abort" => vec!["-X".into()],
            test => vec!["-t".into(), test.into()],
        };
        args.extend(device);
        let out = self.runner.run_unchecked("smartctl", &args, None).await?;
        // Bits 0-2 of the exit status: bad arguments, the device could not
        // be opened, or it refused the command (a self-test already
        // running is refused this way).
        if out.code.is_none_or(|c| c & 0b111 != 0) {
            return Err(DiskError::Verify(format!(
                "smartctl {what} on {name} failed (exit {:?}): {}{}",
                out.code,
                out.stdout.lines().last().unwrap_or(""),
                out.stderr
            )));
        }
        Ok(())
    }

    /// Stores spindown/APM for a rotating disk and applies them now; they
    /// are applied again at start and whenever the disk reappears.
    pub async fn set_power(&self, name: &str, settings: &PowerSettings) -> Result<(), DiskError> {
        power::validate(settings)?;
        let list = self.list().await?;
        let target = find(&list.disks, name)?;
        if !target.whole_disk || !target.disk.rotational || target.disk.transport == Transport::Loop
        {
            return Err(DiskError::NotSupported(format!(
                "{name} is not a rotating disk; spindown and APM apply to hard disks"
            )));
        }
        let (Some(identity), _) = target.disk.identity() else {
            return Err(DiskError::NotSupported(format!(
                "{name} reports no serial number to remember it by"
            )));
        };
        self.apply_power(name, settings).await?;
        self.store.put_disk_power(identity, settings)?;
        Ok(())
    }

    async fn apply_power(&self, name: &str, settings: &PowerSettings) -> Result<(), DiskError> {
        let device = self.host.dev_path(name).to_string_lossy().into_owned();
        self.runner
            .run("hdparm", &power::hdparm_args(settings, &device)?)
            .await?;
        Ok(())
    }

    /// Applies stored power settings to every present disk that has them:
    /// at start, and for disks that appear later.
    pub async fn reapply_power(&self, only: Option<&[String]>) -> Result<(), DiskError> {
        let list = self.list().await?;
        for disk in &list.disks {
            let wanted = only.is_none_or(|names| names.contains(&disk.volume.name));
            if let (true, Some(settings)) = (wanted, &disk.power)
                && let Err(err) = self.apply_power(&disk.volume.name, settings).await
            {
                tracing::warn!(disk = %disk.volume.name, "power settings not applied: {err}");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_checked_per_filesystem() {
        assert!(mkfs("ext4", "media").is_ok());
        assert_eq!(mkfs("xfs", "thirteen_char").unwrap_err().field, "label");
        for bad in ["", "a b", "a\nb", "a,b", "$(x)", "-f", "a/b"] {
            assert_eq!(mkfs("ext4", bad).unwrap_err().field, "label", "{bad:?}");
        }
        assert_eq!(mkfs("zfs", "x").unwrap_err().field, "fs");
        let (program, args) = mkfs("ntfs", "win").unwrap();
        assert_eq!(program, "mkfs.ntfs");
        assert_eq!(args, ["-F", "-Q", "-q", "-L", "win"]);
    }

    #[test]
    fn partition_names_and_mount_names() {
        assert_eq!(first_partition("sda"), "sda1");
        assert_eq!(first_partition("mmcblk1"), "mmcblk1p1");
        assert_eq!(first_partition("nvme0n1"), "nvme0n1p1");
        assert_eq!(mount_name(Some("media"), "u-1"), "media");
        assert_eq!(mount_name(Some("My Disk"), "u-1"), "u-1");
        assert_eq!(mount_name(Some(".."), "u-1"), "u-1");
        assert_eq!(mount_name(None, "u-1"), "u-1");
    }
}
