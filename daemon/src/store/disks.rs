//! Data-disk records: the mounts fstab is rendered from, and power settings.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::{Store, StoreError};
use crate::disks::power::PowerSettings;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredMount {
    pub uuid: String,
    pub mountpoint: String,
    pub mount_type: String,
    pub options: String,
    /// The kernel name the filesystem was last seen on.
    pub device: String,
}

impl Store {
    pub fn mounts(&self) -> Result<Vec<StoredMount>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT uuid, mountpoint, mount_type, options, device FROM mounts ORDER BY mountpoint",
        )?;
        let rows = stmt.query_map([], |row| {
            Ok(StoredMount {
                uuid: row.get(0)?,
                mountpoint: row.get(1)?,
                mount_type: row.get(2)?,
                options: row.get(3)?,
                device: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn put_mount(&self, mount: &StoredMount, now: i64) -> Result<(), StoreError> {
        self.lock().execute(
            "INSERT INTO mounts (uuid, mountpoint, mount_type, options, device, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(uuid) DO UPDATE SET mountpoint = ?2, mount_type = ?3, options = ?4, device = ?5",
            params![mount.uuid, mount.mountpoint, mount.mount_type, mount.options, mount.device, now],
        )?;
        Ok(())
    }

    pub fn delete_mount(&self, uuid: &str) -> Result<(), StoreError> {
        self.lock()
            .execute("DELETE FROM mounts WHERE uuid = ?1", [uuid])?;
        Ok(())
    }

    pub fn disk_power(&self, identity: &str) -> Result<Option<PowerSettings>, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT spindown_minutes, apm FROM disk_power WHERE identity = ?1",
                [identity],
                |row| {
                    Ok(PowerSettings {
                        spindown_minutes: row.get(0)?,
                        apm: row.get(1)?,
                    })
                },
            )
            .optional()?)
    }

    pub fn put_disk_power(&self, identity: &str, power: &PowerSettings) -> Result<(), StoreError> {
        self.lock().execute(
            "INSERT INTO disk_power (identity, spindown_minutes, apm) VALUES (?1, ?2, ?3)
             ON CONFLICT(identity) DO UPDATE SET spindown_minutes = ?2, apm = ?3",
            params![identity, power.spindown_minutes, power.apm],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_and_power_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mount = StoredMount {
            uuid: "u1".into(),
            mountpoint: "/srv/data".into(),
            mount_type: "ext4".into(),
            options: "noatime".into(),
            device: "sda1".into(),
        };
        store.put_mount(&mount, 0).unwrap();
        store
            .put_mount(
                &StoredMount {
                    device: "sdb1".into(),
                    ..mount.clone()
                },
                1,
            )
            .unwrap();
        assert_eq!(store.mounts().unwrap()[0].device, "sdb1");
        store.delete_mount("u1").unwrap();
        assert!(store.mounts().unwrap().is_empty());

        assert_eq!(store.disk_power("WD-1").unwrap(), None);
        let power = PowerSettings {
            spindown_minutes: Some(20),
            apm: Some(127),
        };
        store.put_disk_power("WD-1", &power).unwrap();
        assert_eq!(store.disk_power("WD-1").unwrap(), Some(power));
    }
}
