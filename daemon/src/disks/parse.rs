//! Pure parsers for what the kernel, udev and blkid say about block devices.

use std::collections::BTreeMap;

use serde::Serialize;

/// One line of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    pub major_minor: String,
    pub mountpoint: String,
    pub fs_type: String,
    pub source: String,
    /// Per-mount options (`rw,noatime`) followed by the filesystem's own.
    pub options: Vec<String>,
}

/// mountinfo escapes space, tab, newline and backslash as octal; the
/// rest, UTF-8 included, is as the path's bytes.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        if let (b'\\', Some(digits)) = (bytes[i], escape) {
            let code = digits.iter().fold(0u32, |n, d| n * 8 + u32::from(d - b'0'));
            if let Ok(byte) = u8::try_from(code) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let tail: Vec<&str> = after.split(' ').collect();
            let (major_minor, mountpoint, mount_opts) =
                (fields.get(2)?, fields.get(4)?, fields.get(5)?);
            let (fs_type, source, super_opts) =
                (tail.first()?, tail.get(1)?, tail.get(2).unwrap_or(&""));
            let mut options: Vec<String> = mount_opts.split(',').map(str::to_owned).collect();
            options.extend(
                super_opts
                    .split(',')
                    .filter(|o| !o.is_empty() && !options.iter().any(|m| m == o))
                    .map(str::to_owned)
                    .collect::<Vec<_>>(),
            );
            Some(MountEntry {
                major_minor: (*major_minor).to_owned(),
                mountpoint: unescape_octal(mountpoint),
                fs_type: (*fs_type).to_owned(),
                source: unescape_octal(source),
                options,
            })
        })
        .collect()
}

/// The `E:KEY=value` properties of a udev database record.
pub fn udev_properties(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("E:")?.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `blkid -o export` output: `KEY=value` lines, with shell-style backslash
/// escapes in values (a label with a space comes out as `My\ Disk`).
pub fn blkid_export(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| {
            let mut value = String::with_capacity(v.len());
            let mut chars = v.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
            (k.to_owned(), value)
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Sata,
    Usb,
    Nvme,
    Mmc,
    Virtio,
    Loop,
    Other,
}

/// Which bus a disk is on, from where it sits in the device tree.
pub fn transport(name: &str, device_path: &str) -> Transport {
    if name.starts_with("loop") {
        Transport::Loop
    } else if device_path.contains("/usb") {
        Transport::Usb
    } else if name.starts_with("nvme") {
        Transport::Nvme
    } else if name.starts_with("mmcblk") {
        Transport::Mmc
    } else if device_path.contains("/virtio") {
        Transport::Virtio
    } else if device_path.contains("/ata") {
        Transport::Sata
    } else {
        Transport::Other
    }
}

/// A USB device's `speed` in Mbit/s ("480", "5000", and "1.5" for low-speed).
pub fn usb_speed_mbps(text: &str) -> Option<u64> {
    let speed: f64 = text.trim().parse().ok()?;
    (speed.is_finite() && speed > 0.0).then_some(speed as u64)
}

/// A USB 3 device (`version` 3.x) linked at less than 5 Gbit/s fell back to
/// USB 2: a bad cable, hub or port, and a quarter of the throughput.
pub fn usb_degraded(version: Option<&str>, speed_mbps: Option<u64>) -> bool {
    let usb3 = version
        .and_then(|v| v.trim().split('.').next()?.parse::<u32>().ok())
        .is_some_and(|major| major >= 3);
    usb3 && speed_mbps.is_some_and(|s| s < 5000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 179:2 / / rw,noatime shared:1 - ext4 /dev/mmcblk0p2 rw,commit=600
42 27 8:1 / /srv/my\\040disk rw,noatime shared:40 - fuseblk /dev/sda1 rw,user_id=0,group_id=0,allow_other,blksize=4096
";

    #[test]
    fn mountinfo_with_optional_fields_and_escapes() {
        let mounts = mountinfo(MOUNTINFO);
        assert_eq!(mounts.len(), 3);
        assert_eq!(mounts[1].major_minor, "179:2");
        assert_eq!(mounts[1].mountpoint, "/");
        assert_eq!(mounts[1].options, ["rw", "noatime", "commit=600"]);
        assert_eq!(mounts[2].mountpoint, "/srv/my disk");
        assert_eq!(mounts[2].fs_type, "fuseblk");
        assert!(mounts[2].options.contains(&"allow_other".to_owned()));
    }

    #[test]
    fn octal_unescape_leaves_other_backslashes() {
        assert_eq!(unescape_octal("a\\134b\\011c"), "a\\b\tc");
        assert_eq!(unescape_octal("a\\x"), "a\\x");
        assert_eq!(unescape_octal("end\\04"), "end\\04");
        assert_eq!(unescape_octal("/srv/m\\303\\251dia"), "/srv/média");
        assert_eq!(unescape_octal("/srv/média\\040x"), "/srv/média x");
    }

    #[test]
    fn udev_and_blkid_properties() {
        let udev = udev_properties(
            "S:disk/by-id/x\nE:ID_SERIAL_SHORT=WD-WX11A\nE:ID_FS_TYPE=ext4\nG:systemd\n",
        );
        assert_eq!(udev["ID_SERIAL_SHORT"], "WD-WX11A");
        assert_eq!(udev.len(), 2);
        let blkid = blkid_export("DEVNAME=/dev/loop0\nLABEL=My\\ Disk\nUUID=8de3\nTYPE=ext4\n");
        assert_eq!(blkid["LABEL"], "My Disk");
        assert_eq!(blkid["TYPE"], "ext4");
    }

    #[test]
    fn transports_from_device_paths() {
        let usb = "devices/platform/soc/12000000.dwc3/xhci-hcd.3.auto/usb3/3-1/3-1:1.0/host0/target0:0:0/0:0:0:0/block/sda";
        assert_eq!(transport("sda", usb), Transport::Usb);
        let sata = "devices/platform/soc/fc000000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0/ata1/host0/target0:0:0/0:0:0:0/block/sda";
        assert_eq!(transport("sda", sata), Transport::Sata);
        assert_eq!(
            transport("loop3", "devices/virtual/block/loop3"),
            Transport::Loop
        );
        assert_eq!(
            transport("mmcblk0", "devices/platform/mmc/block/mmcblk0"),
            Transport::Mmc
        );
        assert_eq!(
            transport("vda", "devices/pci0000:00/0000:00:04.0/virtio1/block/vda"),
            Transport::Virtio
        );
        assert_eq!(
            transport("nvme0n1", "devices/pci0000:00/nvme/nvme0/nvme0n1"),
            Transport::Nvme
        );
    }

    #[test]
    fn usb_fallback_to_usb2_is_flagged() {
        assert_eq!(usb_speed_mbps("480\n"), Some(480));
        assert_eq!(usb_speed_mbps("1.5"), Some(1));
        assert!(usb_degraded(Some(" 3.20"), Some(480)));
        assert!(!usb_degraded(Some(" 3.20"), Some(5000)));
        assert!(
            !usb_degraded(Some(" 2.00"), Some(480)),
            "a USB 2 device is as fast as it gets"
        );
        assert!(!usb_degraded(None, Some(480)));
    }
}
