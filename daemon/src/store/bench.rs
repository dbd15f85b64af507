//! Disk benchmark runs: a row per run with the keys it is searched by and
//! the whole run as a JSON document.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError};

/// Runs kept; the oldest go first.
const DISK_RUNS_KEPT: i64 = 1000;

/// What a run is found by, beside its document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskRunRow {
    pub started_at: i64,
    /// Which disk (serial, or a loop device's backing file) it measured.
    pub disk: String,
    /// The preset, or `jobfile:<hash>` for a job file.
    pub preset: String,
    pub status: String,
    pub target: String,
}

impl Store {
    pub fn add_disk_run(&self, row: &DiskRunRow, document: &str) -> Result<i64, StoreError> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO disk_runs (started_at, disk, preset, status, target, document)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                row.started_at,
                row.disk,
                row.preset,
                row.status,
                row.target,
                document
            ],
        )?;
        let id = conn.last_insert_rowid();
        conn.execute(
            "DELETE FROM disk_runs WHERE id <= ?1",
            [id - DISK_RUNS_KEPT],
        )?;
        Ok(id)
    }

    pub fn update_disk_run(&self, id: i64, status: &str, document: &str) -> Result<(), StoreError> {
        self.lock().execute(
            "UPDATE disk_runs SET status = ?2, document = ?3 WHERE id = ?1",
            params![id, status, document],
        )?;
        Ok(())
    }

    /// The newest `limit` runs' documents, newest first.
    pub fn disk_runs(&self, limit: u32) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare("SELECT document FROM disk_runs ORDER BY id DESC LIMIT ?1")?;
        let rows = stmt.query_map([limit], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn disk_run(&self, id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT document FROM disk_runs WHERE id = ?1",
                [id],
                |row| row.get(0),
            )
            .optional()?)
    }

    /// The newest `limit` runs of `disk` and `preset` with `status` that
    /// came before run `before`, newest first.
    pub fn similar_disk_runs(
        &self,
        disk: &str,
        preset: &str,
        status: &str,
        before: i64,
        limit: u32,
    ) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT document FROM disk_runs
             WHERE disk = ?1 AND preset = ?2 AND status = ?3 AND id < ?4
             ORDER BY id DESC LIMIT ?5",
        )?;
        let rows = stmt.query_map(params![disk, preset, status, before, limit], |row| {
            row.get(0)
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Runs with `status`, as (id, target).
    pub fn disk_runs_with_status(&self, status: &str) -> Result<Vec<(i64, String)>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare("SELECT id, target FROM disk_runs WHERE status = ?1")?;
        let rows = stmt.query_map([status], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_found_by_disk_preset_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let row = |disk: &str, status: &str| DiskRunRow {
            started_at: 1,
            disk: disk.into(),
            preset: "quick".into(),
            status: status.into(),
            target: "/srv/a".into(),
        };
        store.add_disk_run(&row("sn1", "done"), "a").unwrap();
        let b = store.add_disk_run(&row("sn2", "done"), "b").unwrap();
        let c = store.add_disk_run(&row("sn1", "running"), "c").unwrap();
        store.update_disk_run(c, "done", "c2").unwrap();
        let d = store.add_disk_run(&row("sn1", "running"), "d").unwrap();
        assert_eq!(
            store
                .similar_disk_runs("sn1", "quick", "done", d, 5)
                .unwrap(),
            ["c2", "a"]
        );
        assert_eq!(
            store
                .similar_disk_runs("sn1", "quick", "done", c, 5)
                .unwrap(),
            ["a"]
        );
        assert_eq!(store.disk_runs(2).unwrap(), ["d", "c2"]);
        assert_eq!(store.disk_run(b).unwrap().as_deref(), Some("b"));
        assert_eq!(
            store.disk_runs_with_status("running").unwrap(),
            [(d, "/srv/a".to_owned())]
        );
    }
}
