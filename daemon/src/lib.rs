//! nasd: the NAS firmware service. Data flows one way, observe -> decide ->
//! apply -> record; see ARCHITECTURE.md for the map.

pub mod api;
pub mod auth;
pub mod bench;
pub mod config;
pub mod disks;
pub mod host;
pub mod inventory;
pub mod monitor;
pub mod schedule;
pub mod shares;
pub mod store;
pub mod system;
pub mod tuning;
pub mod validate;
