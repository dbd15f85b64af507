//! Notices disks that appear or vanish without a restart. It polls the names
//! in `/sys/block` (no device I/O, so sleeping disks stay asleep) and gives
//! a disk that reappears its spindown settings back.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use super::Disks;

/// Often enough that a plugged-in disk is handled within 5 s.
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

impl Disks {
    fn present_names(&self) -> BTreeSet<String> {
        match self.host.block_device_names() {
            Ok(names) => names.into_iter().collect(),
            Err(err) => {
                tracing::warn!("cannot list block devices: {err}");
                BTreeSet::new()
            }
        }
    }
}

pub async fn watch(disks: Arc<Disks>) {
    let mut known = disks.present_names();
    loop {
        tokio::time::sleep(POLL_INTERVAL).await;
        let now = disks.present_names();
        let added: Vec<String> = now.difference(&known).cloned().collect();
        for gone in known.difference(&now) {
            tracing::warn!(disk = %gone, "disk vanished");
        }
        if !added.is_empty() {
            tracing::info!(disks = ?added, "disk(s) appeared");
            if let Err(err) = disks.reapply_power(Some(&added)).await {
                tracing::warn!("after hotplug: {err}");
            }
        }
        known = now;
    }
}
