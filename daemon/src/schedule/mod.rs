//! Scheduled self-tests: cron schedules of benchmarks, SMART tests, health
//! checks and store upkeep, with a history and notifications.

pub mod cron;
pub mod model;
