//! The scheduler's decisions, pure and driven by a clock the caller
//! passes: when each schedule runs next, what a start after downtime
//! catches up (once, never a burst), and whether a heavy job may run now.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;

use super::cron::Cron;
use super::model::{Job, Schedule, WhenBusy};
use crate::inventory::ThermalZone;

/// A heavy job waits at most this long for the board to cool or calm down.
pub const MAX_WAIT: Duration = Duration::from_secs(30 * 60);
/// Hot: a zone within this of a trip point where the kernel acts.
pub const HOT_MARGIN_C: f64 = 10.0;

struct Entry {
    cron: Cron,
    next: Option<Timestamp>,
}

/// The next run of every enabled schedule.
#[derive(Default)]
pub struct Timetable {
    entries: BTreeMap<i64, Entry>,
}

/// A run to make at start because the schedule missed it while nasd was
/// stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatchUp {
    pub schedule_id: i64,
    pub missed_at: Timestamp,
}

impl Timetable {
    /// Builds the table at start. Each schedule asking for it catches up
    /// its latest missed run, once; the others wait for their next time.
    pub fn at_start(
        schedules: &[(Schedule, Cron, Option<i64>)],
        now: Timestamp,
    ) -> (Timetable, Vec<CatchUp>) {
        let mut table = Timetable::default();
        let mut catch_up = Vec::new();
        for (schedule, cron, last_run) in schedules {
            if !schedule.enabled {
                continue;
            }
            let since = Timestamp::from_second(last_run.unwrap_or(0).max(schedule.changed_at))
                .unwrap_or(now);
            if schedule.catch_up
                && let Some(missed_at) = cron.last_due(since, now)
            {
                catch_up.push(CatchUp {
                    schedule_id: schedule.id,
                    missed_at,
                });
            }
            table.set(schedule, cron.clone(), now);
        }
        (table, catch_up)
    }

    /// Adds or replaces a schedule; a disabled one is removed.
    pub fn set(&mut self, schedule: &Schedule, cron: Cron, now: Timestamp) {
        if !schedule.enabled {
            self.entries.remove(&schedule.id);
            return;
        }
        let next = cron.next_after(now).map(|z| z.timestamp());
        self.entries.insert(schedule.id, Entry { cron, next });
    }

    pub fn remove(&mut self, id: i64) {
        self.entries.remove(&id);
    }

    /// The schedules due at `now`. Each moves on to its first time after
    /// `now`: however many times were passed (a suspended board, a clock
    /// step), it runs once.
    pub fn due(&mut self, now: Timestamp) -> Vec<i64> {
        let mut due = Vec::new();
        for (id, entry) in &mut self.entries {
            if entry.next.is_some_and(|next| next <= now) {
                due.push(*id);
                entry.next = entry.cron.next_after(now).map(|z| z.timestamp());
            }
        }
        due
    }

    /// When the earliest schedule is due.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.entries.values().filter_map(|e| e.next).min()
    }
}

/// The wall clock moved this much more (or less) than the time slept: it
/// was set (NTP after a boot without a battery-backed clock, a manual
/// change), and the timetable is rebuilt as at start instead of firing
/// everything in between.
pub const CLOCK_STEP: Duration = Duration::from_secs(300);

pub fn clock_stepped(slept: Duration, wall_moved: jiff::SignedDuration) -> bool {
    let slept = jiff::SignedDuration::try_from(slept).unwrap_or(jiff::SignedDuration::MAX);
    let limit = jiff::SignedDuration::try_from(CLOCK_STEP).unwrap_or(jiff::SignedDuration::MAX);
    (wall_moved - slept).abs() > limit
}

/// Why a heavy job should not start now, if any.
/// Busy: the 1-minute load per CPU above `busy_load_per_cpu`.
pub fn unfavourable(
    zones: &[ThermalZone],
    load_1m: Option<f64>,
    cpus: usize,
    busy_load_per_cpu: f64,
) -> Option<String> {
    for zone in zones {
        let Some(c) = zone.celsius else { continue };
        let trip = zone
            .acting_trips()
            .min_by(|a, b| a.celsius.total_cmp(&b.celsius));
        if let Some(trip) = trip
            && c >= trip.celsius - HOT_MARGIN_C
        {
            return Some(format!(
                "hot: {} at {c:.1} °C, {} trip point at {:.1} °C",
                zone.zone, trip.kind, trip.celsius
            ));
        }
    }
    let cpus = cpus.max(1) as f64;
    match load_1m {
        Some(load) if load / cpus > busy_load_per_cpu => {
            Some(format!("busy: load {load:.2} on {cpus} CPUs"))
        }
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Go,
    /// Check again in a minute.
    Wait(String),
    Skip(String),
}

/// Whether `job` may start: light jobs always; heavy ones not while the
/// board is hot or busy (waiting at most MAX_WAIT when asked to wait).
pub fn gate(
    job: &Job,
    when_busy: WhenBusy,
    unfavourable: Option<String>,
    waited: Duration,
) -> Gate {
    let Some(why) = unfavourable.filter(|_| job.heavy()) else {
        return Gate::Go;
    };
    match when_busy {
        WhenBusy::Skip => Gate::Skip(why),
        WhenBusy::Wait if waited >= MAX_WAIT => Gate::Skip(format!(
            "{why}, still after waiting {} min",
            MAX_WAIT.as_secs() / 60
        )),
        WhenBusy::Wait => Gate::Wait(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::TripPoint;
    use crate::schedule::model::WhenAsleep;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn schedule(id: i64, catch_up: bool) -> Schedule {
        Schedule {
            id,
            name: format!("s{id}"),
            cron: "0 * * * *".into(),
            job: Job::HealthCheck,
            enabled: true,
            catch_up,
            when_asleep: WhenAsleep::Skip,
            when_busy: WhenBusy::Wait,
            timeout_secs: 600,
            created_at: at("2026-11-01T00:00:00Z").as_second(),
            changed_at: at("2026-11-01T00:00:00Z").as_second(),
        }
    }

    #[test]
    fn after_downtime_a_missed_run_is_caught_up_once_and_never_as_a_burst() {
        let cron = Cron::parse("0 * * * *", "UTC").unwrap();
        let last_run = at("2026-11-30T10:00:00Z").as_second();
        // Stopped from 10:30 to 14:10: four hourly runs were missed.
        let now = at("2026-11-30T14:10:00Z");
        let schedules = [
            (schedule(1, true), cron.clone(), Some(last_run)),
            (schedule(2, false), cron.clone(), Some(last_run)),
        ];
        let (mut table, catch_up) = Timetable::at_start(&schedules, now);
        assert_eq!(
            catch_up,
            [CatchUp {
                schedule_id: 1,
                missed_at: at("2026-11-30T14:00:00Z")
            }]
        );
        assert_eq!(table.next_due(), Some(at("2026-11-30T15:00:00Z")));
        assert!(table.due(at("2026-11-30T14:59:59Z")).is_empty());
        assert_eq!(table.due(at("2026-11-30T15:00:00Z")), [1, 2]);
        assert!(table.due(at("2026-11-30T15:00:30Z")).is_empty(), "once");
        // The clock jumps three hours (a suspended board): one run each.
        assert_eq!(table.due(at("2026-11-30T18:20:00Z")), [1, 2]);
        assert!(table.due(at("2026-11-30T18:20:01Z")).is_empty());
        assert_eq!(table.next_due(), Some(at("2026-11-30T19:00:00Z")));
        // Nothing missed: nothing to catch up.
        let fresh = [(
            schedule(3, true),
            cron.clone(),
            Some(at("2026-11-30T14:00:00Z").as_second()),
        )];
        assert!(Timetable::at_start(&fresh, now).1.is_empty());
        // Edited (or enabled) after its last run: what came due before the
        // edit was not missed by downtime.
        let mut edited = schedule(4, true);
        edited.changed_at = at("2026-11-30T14:05:00Z").as_second();
        assert!(
            Timetable::at_start(&[(edited, cron, Some(last_run))], now)
                .1
                .is_empty()
        );
    }

    #[test]
    fn a_clock_set_forward_or_back_is_told_from_sleep() {
        let minute = Duration::from_secs(60);
        assert!(!clock_stepped(minute, jiff::SignedDuration::from_secs(61)));
        // NTP after a boot with the clock at the last shutdown.
        assert!(clock_stepped(minute, jiff::SignedDuration::from_hours(72)));
        assert!(clock_stepped(minute, jiff::SignedDuration::from_hours(-1)));
    }

    #[test]
    fn disabled_and_removed_schedules_never_come_due() {
        let cron = Cron::parse("* * * * *", "UTC").unwrap();
        let mut off = schedule(1, true);
        off.enabled = false;
        let (mut table, catch_up) =
            Timetable::at_start(&[(off, cron.clone(), None)], at("2026-11-30T12:00:00Z"));
        assert!(catch_up.is_empty());
        assert!(table.due(at("2026-12-01T00:00:00Z")).is_empty());
        table.set(&schedule(2, false), cron, at("2026-11-30T12:00:00Z"));
        table.remove(2);
        assert_eq!(table.next_due(), None);
    }

    #[test]
    fn heavy_jobs_wait_for_a_cool_calm_board_light_ones_do_not() {
        let zone = |c: f64| ThermalZone {
            zone: "thermal_zone0".into(),
            kind: Some("cpu-thermal".into()),
            celsius: Some(c),
            trips: vec![TripPoint {
                kind: "passive".into(),
                celsius: 85.0,
            }],
        };
        assert_eq!(unfavourable(&[zone(60.0)], Some(1.0), 4, 0.9), None);
        let hot = unfavourable(&[zone(76.0)], Some(1.0), 4, 0.9).unwrap();
        assert!(hot.starts_with("hot: thermal_zone0"), "{hot}");
        let busy = unfavourable(&[zone(60.0)], Some(3.9), 4, 0.9).unwrap();
        assert!(busy.contains("load 3.90 on 4 CPUs"), "{busy}");
        let bench = Job::DiskBenchmark {
            disk: "sda".into(),
            preset: "quick".into(),
        };
        assert_eq!(gate(&bench, WhenBusy::Wait, None, Duration::ZERO), Gate::Go);
        assert_eq!(
            gate(
                &bench,
                WhenBusy::Wait,
                Some(busy.clone()),
                Duration::from_secs(60)
            ),
            Gate::Wait(busy.clone())
        );
        assert!(matches!(
            gate(&bench, WhenBusy::Wait, Some(busy.clone()), MAX_WAIT),
            Gate::Skip(why) if why.contains("still after waiting 30 min")
        ));
        assert_eq!(
            gate(&bench, WhenBusy::Skip, Some(busy.clone()), Duration::ZERO),
            Gate::Skip(busy.clone())
        );
        assert_eq!(
            gate(
                &Job::HealthCheck,
                WhenBusy::Wait,
                Some(busy),
                Duration::ZERO
            ),
            Gate::Go
        );
    }
}
