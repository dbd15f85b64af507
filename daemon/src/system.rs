//! The box itself: its name, its clock, the daemon's recent log lines, and
//! reboot or shutdown behind a typed confirmation. A daemon reading a
//! fixture tree never renames, reboots or stops the machine it runs on.

use serde::{Deserialize, Serialize};

use crate::host::runner::{RunError, Runner};
use crate::host::{Host, HostError};
use crate::validate::Invalid;

#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("this daemon reads a fixture tree, not this machine: it will not {0} it")]
    NotLive(&'static str),
}

/// A host name as RFC 1123 allows: 1 to 63 of a-z, 0-9 and '-', not at
/// either end.
pub fn check_hostname(name: &str) -> Result<(), Invalid> {
    let ok = (1..=63).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(Invalid::new(
            "hostname",
            "must be 1 to 63 lower-case letters, digits and '-', not starting or ending with '-'",
        ))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Clock {
    pub unix: i64,
    /// RFC 3339 with the zone.
    pub local: String,
    pub time_zone: String,
}

pub fn clock() -> Clock {
    let now = jiff::Zoned::now();
    Clock {
        unix: now.timestamp().as_second(),
        local: now.to_string(),
        time_zone: now.time_zone().iana_name().unwrap_or("UTC").to_owned(),
    }
}

/// Renames the box: /etc/hostname, then the running kernel's name.
pub async fn set_hostname(host: &Host, runner: &Runner, name: &str) -> Result<(), SystemError> {
    check_hostname(name)?;
    host.write_etc_atomic("hostname", &format!("{name}\n"))?;
    if host.is_live() {
        runner.run("hostname", &[name]).await?;
    }
    Ok(())
}

/// The daemon's newest `lines` log lines from the journal (none where
/// there is no journal).
pub async fn log_lines(runner: &Runner, lines: u32) -> Vec<String> {
    let n = lines.clamp(1, 1000).to_string();
    let args = [
        "-u",
        "nasd",
        "-n",
        n.as_str(),
        "-o",
        "short-iso",
        "--no-pager",
        "-q",
    ];
    match runner.run("journalctl", &args).await {
        Ok(out) => out.stdout.lines().map(str::to_owned).collect(),
        Err(err) => {
            tracing::debug!("no journal: {err}");
            Vec::new()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PowerAction {
    Reboot,
    Shutdown,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerRequest {
    pub action: PowerAction,
    /// The action's name typed again.
    #[serde(default)]
    pub confirm: String,
}

/// Reboots or powers off, once confirmed, through systemd.
pub async fn power(
    host: &Host,
    runner: &Runner,
    request: &PowerRequest,
) -> Result<(), SystemError> {
    let (word, verb) = match request.action {
        PowerAction::Reboot => ("reboot", "reboot"),
        PowerAction::Shutdown => ("shutdown", "poweroff"),
    };
    if request.confirm != word {
        return Err(Invalid::new("confirm", format!("type '{word}' to confirm")).into());
    }
    if !host.is_live() {
        return Err(SystemError::NotLive(if word == "reboot" {
            "reboot"
        } else {
            "shut down"
        }));
    }
    runner.run("systemctl", &[verb]).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_follow_rfc_1123() {
        assert!(check_hostname("nasd-a1b2").is_ok());
        for bad in [
            "",
            "-nas",
            "nas-",
            "NAS",
            "nas.local",
            "nas box",
            &"a".repeat(64),
        ] {
            assert_eq!(check_hostname(bad).unwrap_err().field, "hostname", "{bad}");
        }
    }
}
