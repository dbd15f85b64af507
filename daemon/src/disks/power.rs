//! Spindown and APM for rotating disks, as hdparm takes them.

use serde::{Deserialize, Serialize};

use crate::validate::Invalid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PowerSettings {
    /// Minutes idle before the disk spins down; 0 never. Up to 20 minutes
    /// in any minute, then in steps of 30 up to 330 (hdparm's encoding).
    pub spindown_minutes: Option<u32>,
    /// Advanced power management level, 1-255 (255 turns it off; below 128
    /// the disk may spin down on its own).
    pub apm: Option<u8>,
}

/// hdparm `-S` value for a spindown time: 1-240 count 5 s units, 241-251
/// count 30 min units, 0 disables.
pub fn spindown_code(minutes: u32) -> Result<u8, Invalid> {
    match minutes {
        0 => Ok(0),
        1..=20 => Ok((minutes * 12) as u8),
        30..=330 if minutes.is_multiple_of(30) => Ok((240 + minutes / 30) as u8),
        _ => Err(Invalid::new(
            "spindown_minutes",
            "must be 0 (never), 1 to 20, or a multiple of 30 up to 330",
        )),
    }
}

pub fn validate(settings: &PowerSettings) -> Result<(), Invalid> {
    if let Some(minutes) = settings.spindown_minutes {
        spindown_code(minutes)?;
    }
    if settings.apm == Some(0) {
        return Err(Invalid::new("apm", "must be 1 to 255"));
    }
    Ok(())
}

/// The hdparm argument vector that applies `settings` to `device`.
pub fn hdparm_args(settings: &PowerSettings, device: &str) -> Result<Vec<String>, Invalid> {
    let mut args = Vec::new();
    if let Some(minutes) = settings.spindown_minutes {
        args.push(format!("-S{}", spindown_code(minutes)?));
    }
    if let Some(apm) = settings.apm {
        validate(settings)?;
        args.push(format!("-B{apm}"));
    }
    args.push(device.to_owned());
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spindown_encoding_follows_hdparm() {
        assert_eq!(spindown_code(0), Ok(0));
        assert_eq!(spindown_code(1), Ok(12));
        assert_eq!(spindown_code(20), Ok(240));
        assert_eq!(spindown_code(30), Ok(241));
        assert_eq!(spindown_code(330), Ok(251));
        for bad in [21, 29, 45, 360] {
            assert_eq!(spindown_code(bad).unwrap_err().field, "spindown_minutes");
        }
    }

    #[test]
    fn hdparm_arguments() {
        let s = PowerSettings {
            spindown_minutes: Some(10),
            apm: Some(127),
        };
        assert_eq!(
            hdparm_args(&s, "DEVICE").unwrap(),
            ["-S120", "-B127", "DEVICE"]
        );
        let bad = PowerSettings {
            spindown_minutes: None,
            apm: Some(0),
        };
        assert_eq!(validate(&bad).unwrap_err().field, "apm");
    }
}
