//! fstab is rendered from the store: nasd owns one delimited block and never
//! touches a byte outside it, so hand-written lines and other tools' lines
//! survive every apply.

use crate::validate::Invalid;

pub const BEGIN: &str =
    "# BEGIN nasd data disks (generated from nasd's database; edits inside are replaced)";
pub const END: &str = "# END nasd data disks";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FstabEntry {
    pub uuid: String,
    pub mountpoint: String,
    pub mount_type: String,
    pub options: String,
}

/// A field is safe in fstab when it cannot split into more fields or lines.
fn field(name: &str, value: &str) -> Result<(), Invalid> {
    if value.is_empty()
        || value
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '#')
    {
        Err(Invalid::new(
            name,
            "must not be empty or contain spaces, control characters or '#'",
        ))
    } else {
        Ok(())
    }
}

fn line(entry: &FstabEntry) -> Result<String, Invalid> {
    field("uuid", &entry.uuid)?;
    field("mountpoint", &entry.mountpoint)?;
    field("fs", &entry.mount_type)?;
    field("options", &entry.options)?;
    // fsck at boot only where it is quick and safe to run unattended.
    let pass = if entry.mount_type.starts_with("ext") {
        2
    } else {
        0
    };
    Ok(format!(
        "UUID={} {} {} {} 0 {pass}",
        entry.uuid, entry.mountpoint, entry.mount_type, entry.options
    ))
}

/// The new fstab: `existing` with nasd's block replaced by `entries` (added
/// at the end if it was not there, removed if `entries` is empty). A block
/// whose markers were damaged by hand (one missing, doubled, out of order)
/// is refused rather than guessed at: guessing could drop the user's lines.
pub fn splice(existing: &str, entries: &[FstabEntry]) -> Result<String, Invalid> {
    let mut block = String::new();
    if !entries.is_empty() {
        block.push_str(BEGIN);
        block.push('\n');
        for entry in entries {
            block.push_str(&line(entry)?);
            block.push('\n');
        }
        block.push_str(END);
        block.push('\n');
    }
    // Byte offsets of whole lines equal to a marker (final newline or not).
    let mut offset = 0;
    let (mut begins, mut ends) = (Vec::new(), Vec::new());
    for raw in existing.split_inclusive('\n') {
        let text = raw.trim_end_matches(['\n', '\r']);
        if text == BEGIN {
            begins.push(offset);
        } else if text == END {
            ends.push(offset + raw.len());
        }
        offset += raw.len();
    }
    Ok(match (begins.as_slice(), ends.as_slice()) {
        ([begin], [end]) if begin < end => {
            format!("{}{block}{}", &existing[..*begin], &existing[*end..])
        }
        ([], []) if block.is_empty() => existing.to_owned(),
        ([], []) if existing.is_empty() || existing.ends_with('\n') => format!("{existing}{block}"),
        ([], []) => format!("{existing}\n{block}"),
        _ => {
            return Err(Invalid::new(
                "fstab",
                format!(
                    "the nasd block's markers ('{BEGIN}' ... '{END}') are damaged; repair them by hand"
                ),
            ));
        }
    })
}

/// The entries nasd wrote, read back (for the drift between store and file).
pub fn managed_lines(existing: &str) -> Vec<&str> {
    existing
        .lines()
        .skip_while(|l| *l != BEGIN)
        .skip(1)
        .take_while(|l| *l != END)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HAND_WRITTEN: &str = "# /etc/fstab: static file system information.\n\
        UUID=1111-2222 /boot vfat defaults 0 2\n\
        \t# odd   spacing kept\n\
        /dev/mmcblk0p2 / ext4 noatime,errors=remount-ro 0 1\n";

    fn entry(uuid: &str, mountpoint: &str) -> FstabEntry {
        FstabEntry {
            uuid: uuid.into(),
            mountpoint: mountpoint.into(),
            mount_type: "ext4".into(),
            options: "noatime,nofail,x-systemd.device-timeout=30s".into(),
        }
    }

    #[test]
    fn adds_replaces_and_removes_only_its_block() {
        let one = splice(HAND_WRITTEN, &[entry("a-1", "/srv/data")]).unwrap();
        assert!(one.starts_with(HAND_WRITTEN), "foreign lines byte for byte");
        assert!(one.contains(
            "\nUUID=a-1 /srv/data ext4 noatime,nofail,x-systemd.device-timeout=30s 0 2\n"
        ));
        assert_eq!(managed_lines(&one).len(), 1);

        let mut edited = one.clone();
        edited.push_str("LABEL=other /mnt/other xfs defaults 0 0\n");
        let two = splice(
            &edited,
            &[entry("a-1", "/srv/data"), entry("b-2", "/srv/more")],
        )
        .unwrap();
        assert!(two.starts_with(HAND_WRITTEN));
        assert!(
            two.ends_with("LABEL=other /mnt/other xfs defaults 0 0\n"),
            "a line after the block stays"
        );
        assert_eq!(managed_lines(&two).len(), 2);

        let none = splice(&two, &[]).unwrap();
        assert_eq!(
            none,
            format!("{HAND_WRITTEN}LABEL=other /mnt/other xfs defaults 0 0\n")
        );
    }

    #[test]
    fn a_second_identical_splice_changes_nothing() {
        let once = splice(HAND_WRITTEN, &[entry("a-1", "/srv/data")]).unwrap();
        assert_eq!(splice(&once, &[entry("a-1", "/srv/data")]).unwrap(), once);
        assert_eq!(splice(HAND_WRITTEN, &[]).unwrap(), HAND_WRITTEN);
    }

    #[test]
    fn fields_that_would_split_a_line_are_refused() {
        for (uuid, mountpoint) in [
            ("a b", "/srv/x"),
            ("a", "/srv/x\n/dev/sda1"),
            ("a", "/srv/#x"),
            ("", "/srv/x"),
        ] {
            assert!(
                splice("", &[entry(uuid, mountpoint)]).is_err(),
                "{uuid:?} {mountpoint:?}"
            );
        }
    }

    #[test]
    fn damaged_markers_are_refused_not_guessed() {
        let good = splice(HAND_WRITTEN, &[entry("a", "/srv/a")]).unwrap();
        let no_end = good.replace(&format!("{END}\n"), "");
        let doubled = format!("{good}{good}");
        let reversed = format!("{END}\n{HAND_WRITTEN}{BEGIN}\n");
        for broken in [no_end, doubled, reversed] {
            let err = splice(&broken, &[entry("b", "/srv/b")]).unwrap_err();
            assert_eq!(err.field, "fstab");
        }
        let end_without_newline = good.trim_end_matches('\n').to_owned();
        let again = splice(&end_without_newline, &[entry("b", "/srv/b")]).unwrap();
        assert_eq!(
            managed_lines(&again),
            ["UUID=b /srv/b ext4 noatime,nofail,x-systemd.device-timeout=30s 0 2"]
        );
        assert!(again.starts_with(HAND_WRITTEN));
    }

    #[test]
    fn a_file_without_a_final_newline_keeps_its_last_line() {
        let out = splice("LABEL=root / ext4 defaults 0 1", &[entry("a", "/srv/a")]).unwrap();
        assert!(out.starts_with("LABEL=root / ext4 defaults 0 1\n# BEGIN nasd"));
    }
}
