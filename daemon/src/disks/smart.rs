//! SMART health from `smartctl --json`. The report is read field by field
//! so that a drive which leaves some out (many USB bridges do) still gives
//! what it has.

use serde::Serialize;
use serde_json::Value;

use super::parse::Transport;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SmartState {
    /// Health read; see `passed`.
    Read,
    /// The disk is spun down and was left asleep.
    Standby,
    /// The device or its bridge offers no SMART.
    Unsupported,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmartReport {
    pub state: SmartState,
    pub passed: Option<bool>,
    pub temperature_celsius: Option<i64>,
    pub power_on_hours: Option<u64>,
    pub reallocated_sectors: Option<u64>,
    pub pending_sectors: Option<u64>,
    pub last_self_test: Option<String>,
    /// Whether the newest self-test in the log passed.
    pub last_self_test_passed: Option<bool>,
    /// Entries in the self-test log, and the power-on hour of the newest:
    /// together they tell a new result from an old one.
    pub self_test_log_entries: Option<u64>,
    pub last_self_test_hours: Option<u64>,
    /// A self-test running now: how much of it is left.
    pub self_test_remaining_percent: Option<u64>,
    /// How long the drive says its tests take.
    pub short_test_minutes: Option<u64>,
    pub long_test_minutes: Option<u64>,
    /// Error counters that only ever grow on a healthy drive by a fault:
    /// reallocated, pending and offline-uncorrectable sectors, reported
    /// uncorrectable errors, interface CRC errors, NVMe media errors.
    pub counters: std::collections::BTreeMap<String, u64>,
    /// What smartctl was told or chose (`sat`, `nvme`, ...).
    pub device_type: Option<String>,
    /// smartctl's own words when it could not read the health.
    pub message: Option<String>,
}

impl SmartReport {
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self {
            state: SmartState::Unsupported,
            passed: None,
            temperature_celsius: None,
            power_on_hours: None,
            reallocated_sectors: None,
            pending_sectors: None,
            last_self_test: None,
            last_self_test_passed: None,
            self_test_log_entries: None,
            last_self_test_hours: None,
            self_test_remaining_percent: None,
            short_test_minutes: None,
            long_test_minutes: None,
            counters: Default::default(),
            device_type: None,
            message: Some(message.into()),
        }
    }
}

/// smartctl's `-d` for a disk: USB bridges need SAT passthrough spelled out;
/// elsewhere smartctl's own detection is right. `None` in the outer option:
/// SMART cannot work on this transport at all.
pub fn device_type(transport: Transport) -> Option<Option<&'static str>> {
    match transport {
        Transport::Usb => Some(Some("sat")),
        Transport::Sata | Transport::Nvme | Transport::Other => Some(None),
        Transport::Loop | Transport::Mmc | Transport::Virtio => None,
    }
}

fn ata_raw(json: &Value, id: u64) -> Option<u64> {
    json["ata_smart_attributes"]["table"]
        .as_array()?
        .iter()
        .find(|attr| attr["id"].as_u64() == Some(id))?["raw"]["value"]
        .as_u64()
}

fn messages(json: &Value) -> Option<String> {
    let texts: Vec<&str> = json["smartctl"]["messages"]
        .as_array()?
        .iter()
        .filter_map(|m| m["string"].as_str())
        .collect();
    (!texts.is_empty()).then(|| texts.join("; "))
}

/// Reads smartctl's JSON and exit status (a bit mask: bit 1 means the
/// device could not be opened or, with `-n standby`, is asleep).
pub fn parse(json_text: &str, exit_code: Option<i32>) -> Result<SmartReport, serde_json::Error> {
    let json: Value = serde_json::from_str(json_text)?;
    let message = messages(&json);
    let device_type = json["device"]["type"].as_str().map(str::to_owned);
    let asleep = message
        .as_deref()
        .is_some_and(|m| m.contains("STANDBY") || m.contains("SLEEP"));
    if asleep {
        return Ok(SmartReport {
            state: SmartState::Standby,
            device_type,
            message,
            ..SmartReport::unsupported("")
        });
    }
    let supported = json["smart_support"]["available"].as_bool() != Some(false)
        && (json.get("smart_status").is_some()
            || json.get("nvme_smart_health_information_log").is_some());
    if !supported || exit_code.is_some_and(|c| c & 0b11 != 0 && json.get("smart_status").is_none())
    {
        return Ok(SmartReport {
            device_type,
            ..SmartReport::unsupported(
                message.unwrap_or_else(|| "the device reports no SMART data".into()),
            )
        });
    }
    let log = json["ata_smart_self_test_log"]["standard"]["table"]
        .as_array()
        .or_else(|| json["nvme_self_test_log"]["table"].as_array());
    let newest_test = log.and_then(|t| t.first());
    let self_test_log_entries = log.map(|t| t.len() as u64);
    let last_self_test_hours = newest_test.and_then(|t| {
        t["lifetime_hours"]
            .as_u64()
            .or(t["power_on_hours"].as_u64())
    });
    let last_self_test = newest_test
        .and_then(|t| {
            t["status"]["string"]
                .as_str()
                .or(t["self_test_result"]["string"].as_str())
        })
        .map(str::to_owned);
    let last_self_test_passed = newest_test.and_then(|t| {
        t["status"]["passed"]
            .as_bool()
            .or_else(|| t["self_test_result"]["value"].as_u64().map(|v| v == 0))
    });
    let ata_test = &json["ata_smart_data"]["self_test"];
    let nvme_log = &json["nvme_self_test_log"];
    let self_test_remaining_percent =
        ata_test["status"]["remaining_percent"]
            .as_u64()
            .or_else(|| {
                (nvme_log["current_self_test_operation"]["value"].as_u64()? != 0).then(|| {
                    100 - nvme_log["current_self_test_completion_percent"]
                        .as_u64()
                        .unwrap_or(0)
                        .min(100)
                })
            });
    let mut counters = std::collections::BTreeMap::new();
    for (id, name) in [
        (5, "reallocated_sectors"),
        (187, "reported_uncorrect"),
        (197, "pending_sectors"),
        (198, "offline_uncorrectable"),
        (199, "udma_crc_errors"),
    ] {
        if let Some(v) = ata_raw(&json, id) {
            counters.insert(name.to_owned(), v);
        }
    }
    if let Some(v) = json["nvme_smart_health_information_log"]["media_errors"].as_u64() {
        counters.insert("media_errors".to_owned(), v);
    }
    Ok(SmartReport {
        state: SmartState::Read,
        passed: json["smart_status"]["passed"].as_bool(),
        temperature_celsius: json["temperature"]["current"].as_i64(),
        power_on_hours: json["power_on_time"]["hours"].as_u64(),
        reallocated_sectors: ata_raw(&json, 5),
        pending_sectors: ata_raw(&json, 197),
        last_self_test,
        last_self_test_passed,
        self_test_log_entries,
        last_self_test_hours,
        self_test_remaining_percent,
        short_test_minutes: ata_test["polling_minutes"]["short"].as_u64(),
        long_test_minutes: ata_test["polling_minutes"]["extended"].as_u64(),
        counters,
        device_type,
        message,
    })
}

#[cfg(test)]
mod tests {
    //! On smartctl output captured from real drives (sources in
    //! tests/fixtures/smart/README.md).
    use super::*;

    const SATA: &str = include_str!("../../../tests/fixtures/smart/sata-hdd.json");
    const USB_SAT: &str = include_str!("../../../tests/fixtures/smart/usb-bridge-sat.json");
    const NVME: &str = include_str!("../../../tests/fixtures/smart/nvme.json");
    const NO_SMART: &str = include_str!("../../../tests/fixtures/smart/no-smart.json");

    #[test]
    fn a_sata_disk() {
        let r = parse(SATA, Some(0)).unwrap();
        assert_eq!(r.state, SmartState::Read);
        assert_eq!(r.passed, Some(true));
        assert_eq!(r.temperature_celsius, Some(32));
        assert_eq!(r.power_on_hours, Some(1730));
        assert_eq!(
            (r.reallocated_sectors, r.pending_sectors),
            (Some(0), Some(0))
        );
        assert_eq!(r.last_self_test.as_deref(), Some("Completed without error"));
        assert_eq!(r.last_self_test_passed, Some(true));
        assert_eq!(r.last_self_test_hours, Some(1708));
        assert!(r.self_test_log_entries.unwrap() >= 3);
        // Captured while a short test ran.
        assert_eq!(r.self_test_remaining_percent, Some(10));
        assert_eq!(
            (r.short_test_minutes, r.long_test_minutes),
            (Some(2), Some(1479))
        );
        assert_eq!(r.counters["offline_uncorrectable"], 0);
        assert_eq!(r.device_type.as_deref(), Some("sat"));
    }

    #[test]
    fn a_disk_behind_a_usb_bridge_with_a_history() {
        // Exit status 100: an attribute failed in the past and the error log
        // has entries; the health itself was read.
        let r = parse(USB_SAT, Some(100)).unwrap();
        assert_eq!(r.state, SmartState::Read);
        assert_eq!(r.passed, Some(true));
        assert_eq!(r.temperature_celsius, Some(36));
        assert_eq!(r.power_on_hours, Some(20836));
        assert_eq!(
            (r.reallocated_sectors, r.pending_sectors),
            (Some(3), Some(1))
        );
        assert_eq!(r.last_self_test, None, "its self-test log is empty");
        assert_eq!(r.self_test_remaining_percent, None, "no test running");
        assert_eq!(r.long_test_minutes, Some(448));
        assert_eq!(
            (
                r.counters["reported_uncorrect"],
                r.counters["offline_uncorrectable"]
            ),
            (2, 1)
        );
    }

    #[test]
    fn an_nvme_drive() {
        let r = parse(NVME, Some(0)).unwrap();
        assert_eq!(r.state, SmartState::Read);
        assert_eq!(r.passed, Some(true));
        assert_eq!(r.temperature_celsius, Some(35));
        assert_eq!(r.power_on_hours, Some(1767));
        assert_eq!(r.reallocated_sectors, None);
        assert_eq!(r.counters.get("media_errors"), Some(&0));
    }

    #[test]
    fn an_unknown_usb_bridge_has_no_smart_and_says_why() {
        let r = parse(NO_SMART, Some(1)).unwrap();
        assert_eq!(r.state, SmartState::Unsupported);
        assert!(r.message.unwrap().contains("Unknown USB bridge"));
    }

    #[test]
    fn a_sleeping_disk_is_reported_as_standby() {
        // Not a capture (none was found in public); built from the message
        // smartctl prints for -n standby: "Device is in %s mode, exit(%d)".
        let json = r#"{"smartctl":{"exit_status":2,"messages":[{"string":"Device is in STANDBY mode, exit(2)","severity":"information"}]},"device":{"type":"sat","protocol":"ATA"}}"#;
        let r = parse(json, Some(2)).unwrap();
        assert_eq!(r.state, SmartState::Standby);
        assert_eq!(r.passed, None);
    }

    #[test]
    fn usb_disks_get_sat_and_virtual_ones_no_smartctl_at_all() {
        assert_eq!(device_type(Transport::Usb), Some(Some("sat")));
        assert_eq!(device_type(Transport::Sata), Some(None));
        assert_eq!(device_type(Transport::Loop), None);
        assert!(parse("not json", Some(0)).is_err());
    }
}
