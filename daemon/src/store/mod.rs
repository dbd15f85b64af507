//! The one source of truth: SQLite in one file in the data directory.
//!
//! WAL with `synchronous=NORMAL` keeps writes few and sequential, which is
//! what an SD card wants; a crash can lose the last transactions but never
//! corrupts the file.

mod bench;
mod disks;
mod metrics;
mod migrations;
mod schedules;
mod settings;
mod shares;
mod users;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::Connection;

pub use bench::DiskRunRow;
pub use disks::StoredMount;
pub use metrics::{Bucket, BucketSum, Resolution};
pub use schedules::JobRunRow;
pub use settings::{Event, Severity};
pub use users::{SessionUser, User};

pub const DB_FILE: &str = "nasd.db";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("database was written by a newer nasd (schema {found}, this build knows {known})")]
    TooNew { found: u32, known: u32 },
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

pub struct Store {
    conn: Mutex<Connection>,
    /// The database file, for work on a connection of its own (VACUUM).
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the database in `data_dir` and brings its
    /// schema up to date.
    pub fn open(data_dir: &Path) -> Result<Self, StoreError> {
        create_private_dir(data_dir)?;
        let path = data_dir.join(DB_FILE);
        let conn = Connection::open(&path).map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        Self::init(conn, path.clone()).map_err(|err| match err {
            StoreError::Sqlite(source) => StoreError::Open { path, source },
            other => other,
        })
    }

    fn init(mut conn: Connection, path: PathBuf) -> Result<Self, StoreError> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        migrations::apply(&mut conn)?;
        Ok(Self {
            conn: Mutex::new(conn),
            path,
        })
    }

    /// The schema version, for `nasd status` and tests.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        Ok(self
            .lock()
            .pragma_query_value(None, "user_version", |row| row.get(0))?)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite itself consistent
        // (the transaction rolls back), so the poisoned guard is still usable.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn create_private_dir(dir: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::DirBuilderExt;
    // Holds password hashes and session tokens: owner only.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| StoreError::DataDir {
            path: dir.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_in_wal_mode_at_the_latest_schema() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("data")).unwrap();
        assert_eq!(store.schema_version().unwrap(), migrations::latest());
        let mode: String = store
            .lock()
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        drop(store);
        // Reopening applies nothing twice.
        let again = Store::open(&dir.path().join("data")).unwrap();
        assert_eq!(again.schema_version().unwrap(), migrations::latest());
    }

    #[test]
    fn a_newer_schema_is_refused_not_downgraded() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        conn.pragma_update(None, "user_version", 999).unwrap();
        drop(conn);
        let err = Store::open(dir.path()).err().unwrap();
        assert!(
            matches!(err, StoreError::TooNew { found: 999, .. }),
            "{err}"
        );
    }
}
