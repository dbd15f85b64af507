//! Cron expressions: five fields (minute, hour, day of month, month, day of
//! week) or `@hourly`, `@daily`, `@weekly`, `@monthly`, evaluated in a time
//! zone so a 03:00 job stays at 03:00 local time across DST changes. A
//! time that a spring-forward skips runs at the first minute after the
//! gap; a time that a fall-back repeats runs once, at its first occurrence
//! (so an hourly job skips the repeated hour).

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, Zoned};

use crate::validate::Invalid;

const FIELDS: [&str; 5] = ["minute", "hour", "day of month", "month", "day of week"];

#[derive(Debug, Clone)]
pub struct Cron {
    tab: cronexpr::Crontab,
    /// The same fields in UTC: matches wall-clock times a DST gap skips
    /// (read as if they were UTC), which the zoned one never sees.
    wall_clock: cronexpr::Crontab,
    zone: TimeZone,
}

/// The five-field form of an alias.
fn expand(text: &str) -> Option<&'static str> {
    Some(match text {
        "@hourly" => "0 * * * *",
        "@daily" | "@midnight" => "0 0 * * *",
        "@weekly" => "0 0 * * 0",
        "@monthly" => "0 0 1 * *",
        "@yearly" | "@annually" => "0 0 1 1 *",
        _ => return None,
    })
}

/// The reason cronexpr gives, without its echo of the input.
fn reason(err: &cronexpr::Error) -> String {
    let text = err.to_string();
    text.rsplit_once("^ ")
        .map_or(text.clone(), |(_, why)| why.to_owned())
}

impl Cron {
    /// Parses `text` for the IANA time zone `zone` ("Europe/Berlin", "UTC").
    /// A bad field is named in the error.
    pub fn parse(text: &str, zone: &str) -> Result<Cron, Invalid> {
        let text = text.trim();
        let five = match expand(text) {
            Some(expanded) => expanded.to_owned(),
            None if text.starts_with('@') => {
                return Err(Invalid::new(
                    "cron",
                    format!("'{text}' is not one of @hourly, @daily, @weekly, @monthly, @yearly"),
                ));
            }
            None => text.to_owned(),
        };
        let fields: Vec<&str> = five.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(Invalid::new(
                "cron",
                format!(
                    "needs five fields (minute hour day-of-month month day-of-week) or an alias such as @daily; got {}",
                    fields.len()
                ),
            ));
        }
        // Each field alone first, so the error can say which one is wrong.
        for (i, field) in fields.iter().enumerate() {
            let mut probe = ["*"; 5];
            probe[i] = field;
            if let Err(err) = cronexpr::parse_crontab(&format!("{} UTC", probe.join(" "))) {
                return Err(Invalid::new(
                    "cron",
                    format!("{} field '{field}': {}", FIELDS[i], reason(&err)),
                ));
            }
        }
        let tab = cronexpr::parse_crontab(&format!("{} {zone}", fields.join(" ")))
            .map_err(|err| Invalid::new("time_zone", reason(&err)))?;
        let wall_clock = cronexpr::parse_crontab(&format!("{} UTC", fields.join(" ")))
            .map_err(|err| Invalid::new("cron", reason(&err)))?;
        let zone = TimeZone::get(zone).map_err(|err| Invalid::new("time_zone", err.to_string()))?;
        let cron = Cron {
            tab,
            wall_clock,
            zone,
        };
        if cron.next_after(Timestamp::now()).is_none() {
            return Err(Invalid::new(
                "cron",
                format!("'{text}' never matches a real date (such as 30 February)"),
            ));
        }
        Ok(cron)
    }

    /// The first run strictly after `t`. A run whose local time a
    /// spring-forward skipped happens at the end of the gap.
    pub fn next_after(&self, t: Timestamp) -> Option<Zoned> {
        let mut next = self.tab.find_next(cronexpr::MakeTimestamp(t)).ok()?;
        // A wall-clock time a fall-back repeats runs at its first occurrence.
        while self
            .zone
            .to_ambiguous_zoned(next.datetime())
            .earlier()
            .is_ok_and(|first| first.timestamp() < next.timestamp())
        {
            next = self
                .tab
                .find_next(cronexpr::MakeTimestamp(next.timestamp()))
                .ok()?;
        }
        for transition in self.zone.following(t) {
            let at = transition.timestamp();
            if at > next.timestamp() {
                break;
            }
            let before = self.zone.to_offset(at - 1.second());
            let gap = transition.offset().seconds() - before.seconds();
            if gap <= 0 {
                continue;
            }
            // The skipped wall-clock minutes, read as UTC.
            let skipped_from = at + before.seconds().seconds();
            let skipped = (0..gap / 60).any(|m| {
                let minute = skipped_from + (i64::from(m) * 60).seconds();
                self.wall_clock
                    .matches(cronexpr::MakeTimestamp(minute))
                    .unwrap_or(false)
            });
            if skipped {
                return Some(at.to_zoned(self.zone.clone()));
            }
        }
        Some(next)
    }

    /// The next `n` runs after `t`.
    pub fn next_runs(&self, t: Timestamp, n: usize) -> Vec<Zoned> {
        let mut runs = Vec::with_capacity(n);
        let mut t = t;
        while runs.len() < n {
            let Some(next) = self.next_after(t) else {
                break;
            };
            t = next.timestamp();
            runs.push(next);
        }
        runs
    }

    /// The latest run time in (`after`, `now`], if any: what a schedule
    /// missed while nothing ran it.
    pub fn last_due(&self, after: Timestamp, now: Timestamp) -> Option<Timestamp> {
        let mut last = None;
        let mut t = after;
        // Walks forward; a run at most every minute keeps this bounded by
        // the downtime, and a year of minutely runs is still quick.
        while let Some(next) = self.next_after(t) {
            let next = next.timestamp();
            if next > now {
                break;
            }
            last = Some(next);
            t = next;
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn runs(cron: &str, zone: &str, after: &str, n: usize) -> Vec<String> {
        Cron::parse(cron, zone)
            .unwrap()
            .next_runs(at(after), n)
            .iter()
            .map(|z| z.strftime("%Y-%m-%d %H:%M %Z").to_string())
            .collect()
    }

    #[test]
    fn aliases_and_fields_give_the_next_runs() {
        assert_eq!(
            runs("@daily", "UTC", "2026-11-30T13:00:00Z", 3),
            [
                "2026-12-01 00:00 UTC",
                "2026-12-02 00:00 UTC",
                "2026-12-03 00:00 UTC"
            ]
        );
        assert_eq!(
            runs("@weekly", "UTC", "2026-11-30T13:00:00Z", 1),
            ["2026-12-06 00:00 UTC"],
            "Sunday"
        );
        assert_eq!(
            runs("@monthly", "UTC", "2026-11-30T13:00:00Z", 1),
            ["2026-12-01 00:00 UTC"]
        );
        assert_eq!(
            runs("*/15 9-10 * * 1-5", "UTC", "2026-11-30T10:40:00Z", 3),
            [
                "2026-11-30 10:45 UTC",
                "2026-12-01 09:00 UTC",
                "2026-12-01 09:15 UTC"
            ]
        );
    }

    #[test]
    fn a_bad_field_is_named() {
        let err = Cron::parse("0 25 * * *", "UTC").unwrap_err();
        assert_eq!(err.field, "cron");
        assert!(err.rule.contains("hour field '25'"), "{err}");
        let err = Cron::parse("0 0 * 13 *", "UTC").unwrap_err();
        assert!(err.rule.contains("month field '13'"), "{err}");
        let err = Cron::parse("0 0 *", "UTC").unwrap_err();
        assert!(err.rule.contains("needs five fields"), "{err}");
        let err = Cron::parse("@sometimes", "UTC").unwrap_err();
        assert!(err.rule.contains("@hourly"), "{err}");
        let err = Cron::parse("x 0 * * *", "UTC").unwrap_err();
        assert!(err.rule.starts_with("minute field 'x'"), "{err}");
        let err = Cron::parse("0 0 30 2 *", "UTC").unwrap_err();
        assert!(err.rule.contains("never matches"), "{err}");
        let err = Cron::parse("0 0 * * *", "Mars/Olympus").unwrap_err();
        assert_eq!(err.field, "time_zone");
    }

    #[test]
    fn local_times_hold_across_dst_changes() {
        // Europe/Berlin: 2026-03-29 02:00 CET jumps to 03:00 CEST;
        // 2026-10-25 03:00 CEST falls back to 02:00 CET.
        assert_eq!(
            runs("0 3 * * *", "Europe/Berlin", "2026-03-27T12:00:00Z", 3),
            [
                "2026-03-28 03:00 CET",
                "2026-03-29 03:00 CEST",
                "2026-03-30 03:00 CEST"
            ],
            "03:00 stays 03:00 local"
        );
        // 02:30 does not exist on the 29th: it runs once, after the gap.
        assert_eq!(
            runs("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2),
            ["2026-03-29 03:00 CEST", "2026-03-30 02:30 CEST"]
        );
        // A job at 02:30 and 03:00 runs once at 03:00 that day, not twice.
        assert_eq!(
            runs("0,30 2-3 * * *", "Europe/Berlin", "2026-03-29T00:45:00Z", 2),
            ["2026-03-29 03:00 CEST", "2026-03-29 03:30 CEST"]
        );
        // 02:30 happens twice on 25 October: one run.
        let autumn = runs("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 3);
        assert_eq!(
            autumn,
            [
                "2026-10-25 02:30 CEST",
                "2026-10-26 02:30 CET",
                "2026-10-27 02:30 CET"
            ]
        );
        // In UTC the daily run moves by the hour the clocks moved.
        let utc: Vec<_> = Cron::parse("0 3 * * *", "Europe/Berlin")
            .unwrap()
            .next_runs(at("2026-03-28T12:00:00Z"), 2)
            .iter()
            .map(|z| z.timestamp().to_string())
            .collect();
        assert_eq!(utc, ["2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z"]);
    }

    #[test]
    fn the_last_missed_run_is_found_once() {
        let cron = Cron::parse("0 * * * *", "UTC").unwrap();
        // Down from 10:30 to 14:10: four runs missed, the last at 14:00.
        assert_eq!(
            cron.last_due(at("2026-11-30T10:30:00Z"), at("2026-11-30T14:10:00Z")),
            Some(at("2026-11-30T14:00:00Z"))
        );
        assert_eq!(
            cron.last_due(at("2026-11-30T10:30:00Z"), at("2026-11-30T10:59:00Z")),
            None
        );
    }
}
