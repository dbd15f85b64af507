//! Settings kept as JSON documents, and the event log.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError};

/// How much an event matters; notifications are routed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }

    fn parse(text: &str) -> Severity {
        match text {
            "critical" => Severity::Critical,
            "warning" => Severity::Warning,
            _ => Severity::Info,
        }
    }
}

/// One entry of the event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    pub id: i64,
    pub at: i64,
    pub source: String,
    pub severity: Severity,
    pub message: String,
}

fn event(row: &rusqlite::Row<'_>) -> rusqlite::Result<Event> {
    Ok(Event {
        id: row.get(0)?,
        at: row.get(1)?,
        source: row.get(2)?,
        severity: Severity::parse(&row.get::<_, String>(3)?),
        message: row.get(4)?,
    })
}

/// Events kept per source; older ones are dropped as new ones arrive.
const EVENTS_KEPT: i64 = 1000;
/// Network test runs kept.
const NET_RUNS_KEPT: i64 = 1000;

impl Store {
    pub fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .query_row("SELECT value FROM settings WHERE key = ?1", [key], |row| {
                row.get(0)
            })
            .optional()?)
    }

    pub fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.lock().execute(
            "INSERT INTO settings (key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = ?2",
            params![key, value],
        )?;
        Ok(())
    }

    pub fn add_event(
        &self,
        source: &str,
        severity: Severity,
        at: i64,
        message: &str,
    ) -> Result<(), StoreError> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO events (at, source, message, severity) VALUES (?1, ?2, ?3, ?4)",
            params![at, source, message, severity.as_str()],
        )?;
        conn.execute(
            "DELETE FROM events WHERE source = ?1 AND id <= (SELECT max(id) FROM events WHERE source = ?1) - ?2",
            params![source, EVENTS_KEPT],
        )?;
        Ok(())
    }

    /// The newest `limit` events of every source, newest first.
    pub fn all_events(&self, limit: u32) -> Result<Vec<Event>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id, at, source, severity, message FROM events ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit], event)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Events after `id`, oldest first (what is left to notify).
    pub fn events_after(&self, id: i64, limit: u32) -> Result<Vec<Event>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id, at, source, severity, message FROM events WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![id, limit], event)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Events at or after `at`, oldest first (a digest's content).
    pub fn events_since(&self, at: i64, limit: u32) -> Result<Vec<Event>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id, at, source, severity, message FROM events WHERE at >= ?1 ORDER BY id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![at, limit], event)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The id of the newest event, 0 when there is none.
    pub fn last_event_id(&self) -> Result<i64, StoreError> {
        Ok(self
            .lock()
            .query_row("SELECT coalesce(max(id), 0) FROM events", [], |row| {
                row.get(0)
            })?)
    }

    /// The newest `limit` events of `source`, newest first, as (time, text).
    pub fn events(&self, source: &str, limit: u32) -> Result<Vec<(i64, String)>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT at, message FROM events WHERE source = ?1 ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![source, limit], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl Store {
    /// Records a run; only the newest NET_RUNS_KEPT are kept, since any
    /// host on the network can start tests.
    pub fn add_net_run(&self, at: i64, document: &str) -> Result<i64, StoreError> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO net_runs (at, document) VALUES (?1, ?2)",
            params![at, document],
        )?;
        let id = conn.last_insert_rowid();
        conn.execute("DELETE FROM net_runs WHERE id <= ?1", [id - NET_RUNS_KEPT])?;
        Ok(id)
    }

    /// The newest `limit` runs, newest first, as (id, document).
    pub fn net_runs(&self, limit: u32) -> Result<Vec<(i64, String)>, StoreError> {
        let conn = self.lock();
        let mut stmt =
            conn.prepare("SELECT id, document FROM net_runs ORDER BY id DESC LIMIT ?1")?;
        let rows = stmt.query_map([limit], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn net_run(&self, id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .query_row("SELECT document FROM net_runs WHERE id = ?1", [id], |row| {
                row.get(0)
            })
            .optional()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_and_events_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.setting("tuning").unwrap(), None);
        store.put_setting("tuning", "{}").unwrap();
        store.put_setting("tuning", "{\"a\":1}").unwrap();
        assert_eq!(
            store.setting("tuning").unwrap().as_deref(),
            Some("{\"a\":1}")
        );
        store
            .add_event("tuning", Severity::Info, 1, "first")
            .unwrap();
        store
            .add_event("tuning", Severity::Warning, 2, "second")
            .unwrap();
        store
            .add_event("disks", Severity::Critical, 3, "other")
            .unwrap();
        let events = store.events("tuning", 10).unwrap();
        assert_eq!(events, [(2, "second".to_owned()), (1, "first".to_owned())]);
        let after = store.events_after(1, 10).unwrap();
        assert_eq!(
            after.iter().map(|e| (e.id, e.severity)).collect::<Vec<_>>(),
            [(2, Severity::Warning), (3, Severity::Critical)]
        );
        assert_eq!(store.last_event_id().unwrap(), 3);
        assert_eq!(store.events_since(2, 10).unwrap().len(), 2);
    }
}
