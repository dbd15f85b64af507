//! Settings kept as JSON documents, and the event log.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError};

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

    pub fn add_event(&self, source: &str, at: i64, message: &str) -> Result<(), StoreError> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO events (at, source, message) VALUES (?1, ?2, ?3)",
            params![at, source, message],
        )?;
        conn.execute(
            "DELETE FROM events WHERE source = ?1 AND id <= (SELECT max(id) FROM events WHERE source = ?1) - ?2",
            params![source, EVENTS_KEPT],
        )?;
        Ok(())
    }

    /// The newest `limit` events of every source, newest first, as
    /// (source, time, text).
    pub fn all_events(&self, limit: u32) -> Result<Vec<(String, i64, String)>, StoreError> {
        let conn = self.lock();
        let mut stmt =
            conn.prepare("SELECT source, at, message FROM events ORDER BY id DESC LIMIT ?1")?;
        let rows = stmt.query_map([limit], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
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
        store.add_event("tuning", 1, "first").unwrap();
        store.add_event("tuning", 2, "second").unwrap();
        store.add_event("disks", 3, "other").unwrap();
        let events = store.events("tuning", 10).unwrap();
        assert_eq!(events, [(2, "second".to_owned()), (1, "first".to_owned())]);
    }
}
