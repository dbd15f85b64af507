//! Shared folders and the Samba users nasd made.

use rusqlite::{OptionalExtension, params};

use super::{Store, StoreError};

impl Store {
    /// Every share's JSON document, in name order.
    pub fn share_documents(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare("SELECT document FROM shares ORDER BY name")?;
        let rows = stmt.query_map([], |row| row.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Replaces all shares at once: the set that was just applied.
    pub fn put_share_documents(&self, shares: &[(String, String)]) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        tx.execute("DELETE FROM shares", [])?;
        for (name, document) in shares {
            tx.execute(
                "INSERT INTO shares (name, document) VALUES (?1, ?2)",
                params![name, document],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Whether nasd made this Samba user's system account; `None` when nasd
    /// does not manage the user.
    pub fn samba_user(&self, name: &str) -> Result<Option<bool>, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT created_system_user FROM samba_users WHERE name = ?1",
                [name],
                |row| row.get(0),
            )
            .optional()?)
    }

    pub fn put_samba_user(&self, name: &str, created_system_user: bool) -> Result<(), StoreError> {
        self.lock().execute(
            "INSERT INTO samba_users (name, created_system_user) VALUES (?1, ?2)
             ON CONFLICT(name) DO NOTHING",
            params![name, created_system_user],
        )?;
        Ok(())
    }

    pub fn delete_samba_user(&self, name: &str) -> Result<(), StoreError> {
        self.lock()
            .execute("DELETE FROM samba_users WHERE name = ?1", [name])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_replaced_as_a_set_and_users_remember_their_origin() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .put_share_documents(&[("b".into(), "{2}".into()), ("a".into(), "{1}".into())])
            .unwrap();
        assert_eq!(store.share_documents().unwrap(), ["{1}", "{2}"]);
        store
            .put_share_documents(&[("c".into(), "{3}".into())])
            .unwrap();
        assert_eq!(store.share_documents().unwrap(), ["{3}"]);
        assert_eq!(store.samba_user("alice").unwrap(), None);
        store.put_samba_user("alice", true).unwrap();
        assert_eq!(store.samba_user("alice").unwrap(), Some(true));
        store.delete_samba_user("alice").unwrap();
        assert_eq!(store.samba_user("alice").unwrap(), None);
    }
}
