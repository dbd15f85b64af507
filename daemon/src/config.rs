//! `nasd.toml`: where to listen, where to keep data, which root to read the
//! machine through, how often to sample. Command-line flags override it. An
//! unknown key or a bad value stops the daemon with the key's name, because a
//! typo silently ignored is a setting the user believes in but does not have.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::validate::Invalid;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {path}: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("config {path}: {invalid}")]
    Invalid { path: PathBuf, invalid: Invalid },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub root: PathBuf,
    /// `/etc` when it is not `<root>/etc` (tests write fstab elsewhere).
    pub etc_dir: Option<PathBuf>,
    /// Data disks are mounted at `<mount_base>/<label or uuid>`.
    pub mount_base: PathBuf,
    pub sample_interval: Duration,
    /// How often the tuning is checked against what the kernel has.
    pub drift_check: Duration,
    /// The iperf3 server's port; 0 turns it off.
    pub iperf3_port: u16,
    /// How often the batch of samples is written (0: every sample).
    pub commit_interval: Duration,
    /// A disk benchmark this many percent below its baseline raises an event.
    pub bench_regression_percent: u8,
    /// Heavy scheduled jobs wait while the 1-minute load per CPU is above this.
    pub busy_load_per_cpu: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([0, 0, 0, 0], 80)),
            data_dir: PathBuf::from("/var/lib/nasd"),
            root: PathBuf::from("/"),
            etc_dir: None,
            mount_base: PathBuf::from("/srv"),
            sample_interval: Duration::from_secs(10),
            drift_check: Duration::from_secs(60),
            iperf3_port: 5201,
            commit_interval: Duration::from_secs(300),
            bench_regression_percent: 20,
            busy_load_per_cpu: 0.9,
        }
    }
}

/// The file as written: every key optional, nothing unknown.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    root: Option<PathBuf>,
    etc_dir: Option<PathBuf>,
    mount_base: Option<PathBuf>,
    sample_interval_secs: Option<u64>,
    drift_check_secs: Option<u64>,
    iperf3_port: Option<u16>,
    commit_interval_secs: Option<u64>,
    bench_regression_percent: Option<u8>,
    busy_load_per_cpu: Option<f64>,
}

pub const SAMPLE_RANGE_SECS: std::ops::RangeInclusive<u64> = 1..=3600;
const DRIFT_RANGE_SECS: std::ops::RangeInclusive<u64> = 1..=86_400;
pub const COMMIT_RANGE_SECS: std::ops::RangeInclusive<u64> = 0..=3600;

pub fn seconds(
    field: &str,
    value: u64,
    range: &std::ops::RangeInclusive<u64>,
) -> Result<Duration, Invalid> {
    if range.contains(&value) {
        Ok(Duration::from_secs(value))
    } else {
        Err(Invalid::new(
            field,
            format!(
                "must be {} to {} seconds, got {value}",
                range.start(),
                range.end()
            ),
        ))
    }
}

pub fn parse_listen(field: &str, value: &str) -> Result<SocketAddr, Invalid> {
    value.parse().map_err(|_| {
        Invalid::new(
            field,
            format!("'{value}' is not an address and port such as 0.0.0.0:80 or [::]:80"),
        )
    })
}

impl Config {
    /// Parses the text of a config file on top of the defaults.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let file: ConfigFile = toml::from_str(text).map_err(|err| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: err.to_string().trim().replace('\n', " "),
        })?;
        let invalid = |invalid| ConfigError::Invalid {
            path: path.to_path_buf(),
            invalid,
        };
        let mut config = Config::default();
        if let Some(listen) = file.listen {
            config.listen = parse_listen("listen", &listen).map_err(invalid)?;
        }
        if let Some(dir) = file.data_dir {
            config.data_dir = absolute("data_dir", dir).map_err(invalid)?;
        }
        if let Some(root) = file.root {
            config.root = absolute("root", root).map_err(invalid)?;
        }
        if let Some(dir) = file.etc_dir {
            config.etc_dir = Some(absolute("etc_dir", dir).map_err(invalid)?);
        }
        if let Some(dir) = file.mount_base {
            config.mount_base = absolute("mount_base", dir).map_err(invalid)?;
        }
        if let Some(secs) = file.sample_interval_secs {
            config.sample_interval =
                seconds("sample_interval_secs", secs, &SAMPLE_RANGE_SECS).map_err(invalid)?;
        }
        if let Some(secs) = file.commit_interval_secs {
            config.commit_interval =
                seconds("commit_interval_secs", secs, &COMMIT_RANGE_SECS).map_err(invalid)?;
        }
        if let Some(port) = file.iperf3_port {
            config.iperf3_port = port;
        }
        if let Some(secs) = file.drift_check_secs {
            config.drift_check =
                seconds("drift_check_secs", secs, &DRIFT_RANGE_SECS).map_err(invalid)?;
        }
        if let Some(percent) = file.bench_regression_percent {
            if !(1..=90).contains(&percent) {
                return Err(invalid(Invalid::new(
                    "bench_regression_percent",
                    format!("must be 1 to 90, got {percent}"),
                )));
            }
            config.bench_regression_percent = percent;
        }
        if let Some(load) = file.busy_load_per_cpu {
            if !(0.1..=100.0).contains(&load) {
                return Err(invalid(Invalid::new(
                    "busy_load_per_cpu",
                    format!("must be 0.1 to 100, got {load}"),
                )));
            }
            config.busy_load_per_cpu = load;
        }
        Ok(config)
    }

    /// Loads `path`; a missing file is an error only when it was asked for.
    pub fn load(path: &Path, explicit: bool) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(path, &text),
            Err(err) if !explicit && err.kind() == std::io::ErrorKind::NotFound => {
                Ok(Self::default())
            }
            Err(source) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }
}

fn absolute(field: &str, path: PathBuf) -> Result<PathBuf, Invalid> {
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(Invalid::new(field, "must be an absolute path"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("nasd.toml"), text)
    }

    #[test]
    fn the_shipped_config_parses() {
        let text = include_str!("../../etc/nasd.toml");
        let config = parse(text).unwrap();
        assert_eq!(config.data_dir, Path::new("/var/lib/nasd"));
        assert_eq!(config.root, Path::new("/"));
        assert_eq!(
            config,
            Config::default(),
            "the shipped file states the defaults"
        );
    }

    #[test]
    fn keys_override_defaults() {
        let config = parse("listen = \"127.0.0.1:8080\"\nsample_interval_secs = 30\n").unwrap();
        assert_eq!(config.listen.port(), 8080);
        assert_eq!(config.sample_interval, Duration::from_secs(30));
        assert_eq!(config.data_dir, Config::default().data_dir);
    }

    #[test]
    fn an_unknown_key_is_named() {
        let err = parse("listen_addr = \"0.0.0.0:80\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("listen_addr"), "{err}");
    }

    #[test]
    fn bad_values_name_the_field_and_rule() {
        let err = parse("listen = \"localhost\"\n").unwrap_err().to_string();
        assert!(
            err.contains("listen:") && err.contains("address and port"),
            "{err}"
        );
        let err = parse("sample_interval_secs = 0\n").unwrap_err().to_string();
        assert!(
            err.contains("sample_interval_secs: must be 1 to 3600"),
            "{err}"
        );
        let err = parse("bench_regression_percent = 95\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bench_regression_percent: must be 1 to 90"),
            "{err}"
        );
        let err = parse("data_dir = \"var\"\n").unwrap_err().to_string();
        assert!(err.contains("data_dir: must be an absolute path"), "{err}");
        let err = parse("sample_interval_secs = \"ten\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("sample_interval_secs"), "{err}");
    }

    #[test]
    fn a_missing_default_file_is_the_defaults_but_an_asked_for_one_is_an_error() {
        let missing = Path::new("/nonexistent/nasd.toml");
        assert_eq!(Config::load(missing, false).unwrap(), Config::default());
        assert!(Config::load(missing, true).is_err());
    }
}
