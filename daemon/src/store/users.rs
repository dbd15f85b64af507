//! Users and sessions. Session tokens are stored only as hashes, so a copy of
//! the database does not let anyone log in.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: i64,
    pub username: String,
    pub password_hash: String,
}

/// The user a live session belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionUser {
    pub user_id: i64,
    pub username: String,
}

impl Store {
    pub fn user_count(&self) -> Result<u64, StoreError> {
        let count: i64 = self
            .lock()
            .query_row("SELECT count(*) FROM users", [], |row| row.get(0))?;
        Ok(count.unsigned_abs())
    }

    /// Creates the first administrator, only while there is none: the check
    /// and the insert are one statement, so two racing setups cannot both win.
    /// Returns the new user's id, or `None` when a user already exists.
    pub fn create_first_user(
        &self,
        username: &str,
        password_hash: &str,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        let conn = self.lock();
        let inserted = conn.execute(
            "INSERT INTO users (username, password_hash, created_at)
             SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM users)",
            params![username, password_hash, now],
        )?;
        Ok((inserted == 1).then(|| conn.last_insert_rowid()))
    }

    pub fn find_user(&self, username: &str) -> Result<Option<User>, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT id, username, password_hash FROM users WHERE username = ?1",
                [username],
                |row| {
                    Ok(User {
                        id: row.get(0)?,
                        username: row.get(1)?,
                        password_hash: row.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    pub fn password_hash(&self, user_id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT password_hash FROM users WHERE id = ?1",
                [user_id],
                |row| row.get(0),
            )
            .optional()?)
    }

    /// Sets a new password and ends every other session of the user, in one
    /// transaction: a stolen session must not outlive the password change.
    pub fn change_password(
        &self,
        user_id: i64,
        password_hash: &str,
        keep_session_hash: &str,
    ) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE users SET password_hash = ?1 WHERE id = ?2",
            params![password_hash, user_id],
        )?;
        tx.execute(
            "DELETE FROM sessions WHERE user_id = ?1 AND token_hash <> ?2",
            params![user_id, keep_session_hash],
        )?;
        tx.commit()?;
        Ok(())
    }

    pub fn create_session(
        &self,
        token_hash: &str,
        user_id: i64,
        now: i64,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        let conn = self.lock();
        // Expired sessions are swept whenever a new one starts, so the table
        // stays small without a background timer.
        conn.execute("DELETE FROM sessions WHERE expires_at <= ?1", [now])?;
        conn.execute(
            "INSERT INTO sessions (token_hash, user_id, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![token_hash, user_id, now, expires_at],
        )?;
        Ok(())
    }

    pub fn session_user(
        &self,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<SessionUser>, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT u.id, u.username FROM sessions s JOIN users u ON u.id = s.user_id
                 WHERE s.token_hash = ?1 AND s.expires_at > ?2",
                params![token_hash, now],
                |row| {
                    Ok(SessionUser {
                        user_id: row.get(0)?,
                        username: row.get(1)?,
                    })
                },
            )
            .optional()?)
    }

    /// A user's live sessions as (token hash, created, expires), newest
    /// first.
    pub fn sessions_of(
        &self,
        user_id: i64,
        now: i64,
    ) -> Result<Vec<(String, i64, i64)>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT token_hash, created_at, expires_at FROM sessions
             WHERE user_id = ?1 AND expires_at > ?2 ORDER BY created_at DESC",
        )?;
        let rows = stmt.query_map(params![user_id, now], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn delete_session(&self, token_hash: &str) -> Result<(), StoreError> {
        self.lock()
            .execute("DELETE FROM sessions WHERE token_hash = ?1", [token_hash])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        (dir, store)
    }

    #[test]
    fn only_one_first_user() {
        let (_dir, store) = store();
        assert!(store.create_first_user("admin", "h1", 1).unwrap().is_some());
        assert_eq!(store.create_first_user("eve", "h2", 2).unwrap(), None);
        assert_eq!(store.user_count().unwrap(), 1);
        assert!(store.find_user("eve").unwrap().is_none());
    }

    #[test]
    fn sessions_expire_and_password_change_keeps_only_the_current() {
        let (_dir, store) = store();
        let id = store.create_first_user("admin", "h1", 0).unwrap().unwrap();
        store.create_session("a", id, 0, 100).unwrap();
        store.create_session("b", id, 0, 100).unwrap();
        assert!(store.session_user("a", 99).unwrap().is_some());
        assert!(store.session_user("a", 100).unwrap().is_none());
        store.change_password(id, "h2", "b").unwrap();
        assert!(store.session_user("a", 1).unwrap().is_none());
        assert_eq!(
            store.session_user("b", 1).unwrap().unwrap().username,
            "admin"
        );
        assert_eq!(store.password_hash(id).unwrap().as_deref(), Some("h2"));
        let live = store.sessions_of(id, 1).unwrap();
        assert_eq!(live.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(), ["b"]);
        store.delete_session("b").unwrap();
        assert!(store.session_user("b", 1).unwrap().is_none());
    }
}
