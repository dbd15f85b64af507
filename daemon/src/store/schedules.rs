//! Schedules (JSON documents with the time of their last run) and the
//! history of the jobs they ran.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError};

/// Job runs kept: the newest, and none older than this many days.
const JOB_RUNS_KEPT: i64 = 5000;
const JOB_RUNS_DAYS: i64 = 365;

/// What a job run is found by, beside its document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRunRow {
    pub schedule_id: Option<i64>,
    pub kind: String,
    pub target: String,
    pub started_at: i64,
    pub status: String,
}

impl Store {
    pub fn add_schedule(&self, document: &str) -> Result<i64, StoreError> {
        let conn = self.lock();
        conn.execute("INSERT INTO schedules (document) VALUES (?1)", [document])?;
        Ok(conn.last_insert_rowid())
    }

    /// Replaces a schedule's document; false when there is no such id.
    pub fn put_schedule(&self, id: i64, document: &str) -> Result<bool, StoreError> {
        let n = self.lock().execute(
            "UPDATE schedules SET document = ?2 WHERE id = ?1",
            params![id, document],
        )?;
        Ok(n == 1)
    }

    pub fn remove_schedule(&self, id: i64) -> Result<bool, StoreError> {
        let n = self
            .lock()
            .execute("DELETE FROM schedules WHERE id = ?1", [id])?;
        Ok(n == 1)
    }

    /// Every schedule as (id, document, last run), by id.
    pub fn schedules(&self) -> Result<Vec<(i64, String, Option<i64>)>, StoreError> {
        let conn = self.lock();
        let mut stmt =
            conn.prepare("SELECT id, document, last_run_at FROM schedules ORDER BY id")?;
        let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn schedule(&self, id: i64) -> Result<Option<(String, Option<i64>)>, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT document, last_run_at FROM schedules WHERE id = ?1",
                [id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?)
    }

    pub fn set_schedule_ran(&self, id: i64, at: i64) -> Result<(), StoreError> {
        self.lock().execute(
            "UPDATE schedules SET last_run_at = ?2 WHERE id = ?1",
            params![id, at],
        )?;
        Ok(())
    }

    pub fn add_job_run(&self, row: &JobRunRow, document: &str) -> Result<i64, StoreError> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO job_runs (schedule_id, kind, target, started_at, status, document)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                row.schedule_id,
                row.kind,
                row.target,
                row.started_at,
                row.status,
                document
            ],
        )?;
        let id = conn.last_insert_rowid();
        conn.execute(
            "DELETE FROM job_runs WHERE id <= ?1 OR started_at < ?2",
            params![id - JOB_RUNS_KEPT, row.started_at - JOB_RUNS_DAYS * 86_400],
        )?;
        Ok(id)
    }

    pub fn update_job_run(&self, id: i64, status: &str, document: &str) -> Result<(), StoreError> {
        self.lock().execute(
            "UPDATE job_runs SET status = ?2, document = ?3 WHERE id = ?1",
            params![id, status, document],
        )?;
        Ok(())
    }

    /// The newest `limit` job runs' documents, newest first.
    pub fn job_runs(&self, limit: u32) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare("SELECT document FROM job_runs ORDER BY id DESC LIMIT ?1")?;
        let rows = stmt.query_map([limit], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn job_run(&self, id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .query_row("SELECT document FROM job_runs WHERE id = ?1", [id], |row| {
                row.get(0)
            })
            .optional()?)
    }

    /// The newest `limit` runs of `kind` on `target` that ran to the end
    /// (ok, or ok with something to report) before run `before`, newest
    /// first: what a result is compared with.
    pub fn finished_job_runs(
        &self,
        kind: &str,
        target: &str,
        before: i64,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT document FROM job_runs
             WHERE kind = ?1 AND target = ?2 AND status IN ('ok', 'warning') AND id < ?3
             ORDER BY id DESC LIMIT ?4",
        )?;
        let rows = stmt.query_map(params![kind, target, before, limit], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Runs left with `status` (a stop in the middle of them), as ids.
    pub fn job_runs_with_status(&self, status: &str) -> Result<Vec<i64>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare("SELECT id FROM job_runs WHERE status = ?1")?;
        let rows = stmt.query_map([status], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Bytes the database file could shrink by, and its size.
    pub fn free_pages_bytes(&self) -> Result<(u64, u64), StoreError> {
        let conn = self.lock();
        let pragma = |name: &str| -> Result<u64, StoreError> {
            let value: i64 = conn.pragma_query_value(None, name, |row| row.get(0))?;
            Ok(value.max(0) as u64)
        };
        let page = pragma("page_size")?;
        Ok((
            pragma("freelist_count")?.saturating_mul(page),
            pragma("page_count")?.saturating_mul(page),
        ))
    }

    /// Rewrites the file without its free pages, on a connection of its
    /// own: the shared one stays free for the API and monitoring meanwhile
    /// (a writer waits at most its busy timeout).
    pub fn vacuum(&self) -> Result<(), StoreError> {
        let conn = rusqlite::Connection::open(&self.path)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        conn.execute_batch("VACUUM")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_and_job_runs_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let a = store.add_schedule("{\"a\":1}").unwrap();
        assert!(store.put_schedule(a, "{\"a\":2}").unwrap());
        assert!(!store.put_schedule(99, "{}").unwrap());
        store.set_schedule_ran(a, 100).unwrap();
        assert_eq!(
            store.schedules().unwrap(),
            [(a, "{\"a\":2}".to_owned(), Some(100))]
        );
        let row = |status: &str| JobRunRow {
            schedule_id: Some(a),
            kind: "net_benchmark".into(),
            target: "peer".into(),
            started_at: 1_000_000,
            status: status.into(),
        };
        let r1 = store.add_job_run(&row("ok"), "r1").unwrap();
        let r2 = store.add_job_run(&row("running"), "r2").unwrap();
        store.update_job_run(r2, "ok", "r2b").unwrap();
        store.add_job_run(&row("failed"), "f").unwrap();
        let r3 = store.add_job_run(&row("running"), "r3").unwrap();
        assert_eq!(
            store
                .finished_job_runs("net_benchmark", "peer", r3, 5)
                .unwrap(),
            ["r2b", "r1"]
        );
        assert_eq!(store.job_runs_with_status("running").unwrap(), [r3]);
        assert_eq!(store.job_runs(1).unwrap(), ["r3"]);
        assert_eq!(store.job_run(r1).unwrap().as_deref(), Some("r1"));
        assert!(store.remove_schedule(a).unwrap());
        let (free, size) = store.free_pages_bytes().unwrap();
        assert!(size > 0 && free <= size);
        store.vacuum().unwrap();
        assert_eq!(store.free_pages_bytes().unwrap().0, 0);
    }
}
