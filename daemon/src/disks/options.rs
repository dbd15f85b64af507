//! Which mount options a filesystem gets, and why. Shown before a mount is
//! applied; extra options a user asks for must be on the filesystem's
//! allow-list, since they end up in fstab.

use serde::Serialize;

use crate::validate::Invalid;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountOption {
    pub option: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountPlan {
    /// The filesystem type as mount(8) and fstab name it (`ntfs-3g`, `ext4`).
    pub mount_type: String,
    pub options: Vec<MountOption>,
    /// Things the user should know that are not options (a driver's limits).
    pub notes: Vec<String>,
}

impl MountPlan {
    pub fn option_string(&self) -> String {
        let names: Vec<&str> = self.options.iter().map(|o| o.option.as_str()).collect();
        names.join(",")
    }
}

/// How NTFS can be mounted on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NtfsDriver {
    /// ntfs-3g over FUSE.
    Ntfs3g,
    /// The kernel's ntfs3 (5.15+).
    Ntfs3,
}

/// An allowed extra option: its name and what its value may be.
enum Value {
    None,
    Number,
    Octal,
    OneOf(&'static [&'static str]),
    /// A btrfs compression spec: `zstd`, `zstd:3`, `lzo`, `zlib:9`.
    Compression,
    /// A subvolume name (letters, digits, `_ . @ / -`).
    Subvolume,
}

const COMMON: &[(&str, Value)] = &[
    ("ro", Value::None),
    ("noexec", Value::None),
    ("nosuid", Value::None),
    ("nodev", Value::None),
    ("sync", Value::None),
];

fn allowed_extras(fs: &str) -> &'static [(&'static str, Value)] {
    match fs {
        "ext4" | "ext3" | "ext2" => &[
            ("discard", Value::None),
            ("nodiscard", Value::None),
            ("commit", Value::Number),
            ("data", Value::OneOf(&["ordered", "journal", "writeback"])),
            // Not "panic": a flaky USB cable must not take the kernel down.
            ("errors", Value::OneOf(&["continue", "remount-ro"])),
            ("acl", Value::None),
            ("noacl", Value::None),
            ("user_xattr", Value::None),
            ("journal_checksum", Value::None),
        ],
        "xfs" => &[
            ("discard", Value::None),
            ("nodiscard", Value::None),
            ("inode64", Value::None),
            ("logbufs", Value::Number),
            ("largeio", Value::None),
        ],
        "btrfs" => &[
            ("compress", Value::Compression),
            ("compress-force", Value::Compression),
            ("discard", Value::OneOf(&["sync", "async"])),
            ("nodiscard", Value::None),
            ("autodefrag", Value::None),
            ("ssd", Value::None),
            ("nossd", Value::None),
            ("space_cache", Value::OneOf(&["v2"])),
            ("commit", Value::Number),
            ("subvol", Value::Subvolume),
        ],
        "ntfs" | "vfat" | "exfat" => &[
            ("uid", Value::Number),
            ("gid", Value::Number),
            ("umask", Value::Octal),
            ("fmask", Value::Octal),
            ("dmask", Value::Octal),
            ("windows_names", Value::None),
        ],
        _ => &[],
    }
}

fn value_fits(rule: &Value, value: Option<&str>) -> bool {
    let chars_ok = |v: &str, extra: &str| {
        !v.is_empty()
            && v.len() <= 64
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
    };
    match (rule, value) {
        (Value::None, None) => true,
        (Value::Number, Some(v)) => v.len() <= 10 && v.parse::<u32>().is_ok(),
        (Value::Octal, Some(v)) => v.len() <= 4 && v.chars().all(|c| ('0'..='7').contains(&c)),
        (Value::OneOf(choices), Some(v)) => choices.contains(&v),
        (Value::Compression, Some(v)) => {
            let (algo, level) = v.split_once(':').map_or((v, None), |(a, l)| (a, Some(l)));
            ["zstd", "lzo", "zlib", "no"].contains(&algo)
                && level.is_none_or(|l| l.parse::<u8>().is_ok_and(|n| (1..=15).contains(&n)))
        }
        (Value::Subvolume, Some(v)) => chars_ok(v, "_.@/-") && !v.contains(".."),
        _ => false,
    }
}

/// Checks one extra option against the filesystem's allow-list.
fn check_extra(fs: &str, option: &str) -> Result<(), Invalid> {
    let (name, value) = option
        .split_once('=')
        .map_or((option, None), |(n, v)| (n, Some(v)));
    let rule = COMMON
        .iter()
        .chain(allowed_extras(fs))
        .find(|(allowed, _)| *allowed == name)
        .map(|(_, rule)| rule);
    match rule {
        Some(rule) if value_fits(rule, value) => Ok(()),
        Some(_) => Err(Invalid::new(
            "options",
            format!("'{option}': the value of {name} is not allowed"),
        )),
        None => Err(Invalid::new(
            "options",
            format!("'{option}' is not an allowed mount option for {fs}"),
        )),
    }
}

/// The options for mounting a filesystem of type `fs` (as blkid names it)
/// on a data disk, plus `extras` the user asked for.
pub fn plan(fs: &str, ntfs: Option<NtfsDriver>, extras: &[String]) -> Result<MountPlan, Invalid> {
    let mut notes = Vec::new();
    let mount_type = match (fs, ntfs) {
        ("ntfs", Some(NtfsDriver::Ntfs3g)) => "ntfs-3g",
        ("ntfs", Some(NtfsDriver::Ntfs3)) => "ntfs3",
        ("ntfs", None) => {
            return Err(Invalid::new(
                "fs",
                "ntfs needs ntfs-3g (install the ntfs-3g package) or the kernel's ntfs3 driver",
            ));
        }
        ("ext4" | "ext3" | "ext2" | "xfs" | "btrfs" | "vfat" | "exfat", _) => fs,
        _ => {
            return Err(Invalid::new(
                "fs",
                format!(
                    "'{fs}' is not a filesystem nasd mounts (ext4, xfs, btrfs, ntfs, exfat, vfat)"
                ),
            ));
        }
    };
    let mut options = vec![MountOption {
        option: "noatime".into(),
        reason: "reads do not cause writes: less wear, less wake-ups, faster".into(),
    }];
    match mount_type {
        "ntfs-3g" => options.push(MountOption {
            option: "big_writes".into(),
            reason: "ntfs-3g writes 128 KiB at a time instead of 4 KiB: several times faster on ARM boards".into(),
        }),
        "ntfs3" => notes.push(
            "no big_writes: that is an ntfs-3g option and the kernel's ntfs3 driver refuses to mount with it"
                .into(),
        ),
        _ => {}
    }
    options.push(MountOption {
        option: "nofail".into(),
        reason: "booting goes on when this disk is missing".into(),
    });
    options.push(MountOption {
        option: "x-systemd.device-timeout=30s".into(),
        reason: "a disk slow to appear (spinning up on USB) is still mounted, and what needs it (the NFS server) waits 30 s at most for a missing one instead of 90 s".into(),
    });
    let checked_fs = if fs == "ntfs" { "ntfs" } else { mount_type };
    for extra in extras {
        if options.iter().any(|o| &o.option == extra) {
            continue;
        }
        check_extra(checked_fs, extra)?;
        options.push(MountOption {
            option: extra.clone(),
            reason: "asked for".into(),
        });
    }
    Ok(MountPlan {
        mount_type: mount_type.to_owned(),
        options,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(plan: &MountPlan) -> Vec<&str> {
        plan.options.iter().map(|o| o.option.as_str()).collect()
    }

    #[test]
    fn every_data_disk_gets_noatime_nofail_and_a_device_timeout() {
        for fs in ["ext4", "xfs", "btrfs"] {
            let p = plan(fs, None, &[]).unwrap();
            assert_eq!(p.mount_type, fs);
            assert_eq!(
                names(&p),
                ["noatime", "nofail", "x-systemd.device-timeout=30s"]
            );
            assert!(p.options.iter().all(|o| !o.reason.is_empty()));
        }
    }

    #[test]
    fn big_writes_only_for_ntfs_3g() {
        let fuse = plan("ntfs", Some(NtfsDriver::Ntfs3g), &[]).unwrap();
        assert_eq!(fuse.mount_type, "ntfs-3g");
        assert!(names(&fuse).contains(&"big_writes"));
        let kernel = plan("ntfs", Some(NtfsDriver::Ntfs3), &[]).unwrap();
        assert_eq!(kernel.mount_type, "ntfs3");
        assert!(!names(&kernel).contains(&"big_writes"));
        assert!(kernel.notes[0].contains("refuses"));
        assert_eq!(plan("ntfs", None, &[]).unwrap_err().field, "fs");
    }

    #[test]
    fn allowed_extras_are_added_once() {
        let extras = vec![
            "compress=zstd:3".to_owned(),
            "noatime".to_owned(),
            "ro".to_owned(),
        ];
        let p = plan("btrfs", None, &extras).unwrap();
        assert_eq!(
            p.option_string(),
            "noatime,nofail,x-systemd.device-timeout=30s,compress=zstd:3,ro"
        );
        let p = plan(
            "ntfs",
            Some(NtfsDriver::Ntfs3g),
            &["uid=1000".into(), "umask=022".into()],
        )
        .unwrap();
        assert!(p.option_string().ends_with("uid=1000,umask=022"));
    }

    #[test]
    fn unknown_and_malicious_options_are_refused_by_name() {
        let bad = [
            "user",
            "exec,suid",
            "noatime\n/dev/sdb / ext4",
            "commit=5;reboot",
            "commit=$(reboot)",
            "data=journal ",
            "subvol=../../etc",
            "compress=zstd:99",
            "uid=",
            "x-systemd.requires=foo.service",
        ];
        for fs in ["ext4", "btrfs"] {
            for option in bad {
                let err = plan(fs, None, &[option.to_owned()]).unwrap_err();
                assert_eq!(err.field, "options", "{fs} {option}");
                assert!(err.rule.contains(option), "{err}");
            }
        }
        let err = plan("xfs", None, &["compress=zstd".into()]).unwrap_err();
        assert_eq!(
            err.rule,
            "'compress=zstd' is not an allowed mount option for xfs"
        );
    }

    #[test]
    fn unknown_filesystems_are_refused() {
        assert_eq!(plan("swap", None, &[]).unwrap_err().field, "fs");
    }
}
