//! Versioned schema changes, applied in order inside one transaction each.
//! `PRAGMA user_version` records how far a database has come. Append only:
//! a released migration is never edited.

use rusqlite::Connection;

use super::StoreError;

const MIGRATIONS: &[&str] = &[
    // 1: administrators and their login sessions.
    "CREATE TABLE users (
         id            INTEGER PRIMARY KEY,
         username      TEXT NOT NULL UNIQUE,
         password_hash TEXT NOT NULL,
         created_at    INTEGER NOT NULL
     );
     CREATE TABLE sessions (
         token_hash TEXT PRIMARY KEY,
         user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
         created_at INTEGER NOT NULL,
         expires_at INTEGER NOT NULL
     );
     CREATE INDEX sessions_by_user ON sessions(user_id);",
    // 2: data disks: the mounts nasd renders into fstab, and spindown/APM
    // per disk, keyed by what identifies the disk across ports and boots.
    "CREATE TABLE mounts (
         uuid       TEXT PRIMARY KEY,
         mountpoint TEXT NOT NULL UNIQUE,
         mount_type TEXT NOT NULL,
         options    TEXT NOT NULL,
         device     TEXT NOT NULL,
         created_at INTEGER NOT NULL
     );
     CREATE TABLE disk_power (
         identity         TEXT PRIMARY KEY,
         spindown_minutes INTEGER,
         apm              INTEGER
     );",
    // 3: settings kept as JSON documents (the desired tuning), and a log
    // of what the daemon did on its own (drift restored, ...).
    "CREATE TABLE settings (
         key   TEXT PRIMARY KEY,
         value TEXT NOT NULL
     );
     CREATE TABLE events (
         id      INTEGER PRIMARY KEY,
         at      INTEGER NOT NULL,
         source  TEXT NOT NULL,
         message TEXT NOT NULL
     );
     CREATE INDEX events_by_source ON events(source, id);",
    // 4: shared folders (as JSON documents: the render input), and the
    // Samba users nasd manages, with whether nasd made their system user.
    "CREATE TABLE shares (
         name     TEXT PRIMARY KEY COLLATE NOCASE,
         document TEXT NOT NULL
     );
     CREATE TABLE samba_users (
         name                TEXT PRIMARY KEY,
         created_system_user INTEGER NOT NULL
     );",
    // 5: network benchmark runs, served and run, as JSON documents.
    "CREATE TABLE net_runs (
         id       INTEGER PRIMARY KEY,
         at       INTEGER NOT NULL,
         document TEXT NOT NULL
     );",
    // 6: metrics. A series is a Prometheus-style key (name{labels}); raw
    // samples, and 1-minute and 15-minute buckets with avg/min/max and the
    // sample count (for weighting the next level up).
    "CREATE TABLE metric_series (
         id  INTEGER PRIMARY KEY,
         key TEXT NOT NULL UNIQUE
     );
     CREATE TABLE metric_raw (
         series INTEGER NOT NULL, t INTEGER NOT NULL, v REAL NOT NULL,
         PRIMARY KEY (series, t)
     ) WITHOUT ROWID;
     CREATE TABLE metric_1m (
         series INTEGER NOT NULL, t INTEGER NOT NULL,
         avg REAL NOT NULL, min REAL NOT NULL, max REAL NOT NULL, n INTEGER NOT NULL,
         PRIMARY KEY (series, t)
     ) WITHOUT ROWID;
     CREATE TABLE metric_15m (
         series INTEGER NOT NULL, t INTEGER NOT NULL,
         avg REAL NOT NULL, min REAL NOT NULL, max REAL NOT NULL, n INTEGER NOT NULL,
         PRIMARY KEY (series, t)
     ) WITHOUT ROWID;",
    // 7: rollups and retention select raw samples by time across series.
    "CREATE INDEX metric_raw_by_time ON metric_raw(t);",
    // 8: disk benchmark runs as JSON documents, with what the baseline of
    // a disk and preset is looked up by.
    "CREATE TABLE disk_runs (
         id         INTEGER PRIMARY KEY,
         started_at INTEGER NOT NULL,
         disk       TEXT NOT NULL,
         preset     TEXT NOT NULL,
         status     TEXT NOT NULL,
         target     TEXT NOT NULL,
         document   TEXT NOT NULL
     );
     CREATE INDEX disk_runs_by_baseline ON disk_runs(disk, preset, status);",
    // 9: schedules and the history of the jobs they ran; events get a
    // severity, which routes notifications.
    "CREATE TABLE schedules (
         id          INTEGER PRIMARY KEY,
         document    TEXT NOT NULL,
         last_run_at INTEGER
     );
     CREATE TABLE job_runs (
         id          INTEGER PRIMARY KEY,
         schedule_id INTEGER,
         kind        TEXT NOT NULL,
         target      TEXT NOT NULL,
         started_at  INTEGER NOT NULL,
         status      TEXT NOT NULL,
         document    TEXT NOT NULL
     );
     CREATE INDEX job_runs_by_job ON job_runs(kind, target, status);
     CREATE INDEX job_runs_by_time ON job_runs(started_at);
     ALTER TABLE events ADD COLUMN severity TEXT NOT NULL DEFAULT 'info';",
];

pub fn latest() -> u32 {
    MIGRATIONS.len() as u32
}

pub fn apply(conn: &mut Connection) -> Result<(), StoreError> {
    let current: u32 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if current > latest() {
        return Err(StoreError::TooNew {
            found: current,
            known: latest(),
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", index as u32 + 1)?;
        tx.commit()?;
    }
    Ok(())
}
