//! Network benchmarks speaking iperf3's protocol: a server inside the
//! daemon and a client, with every test kept in the history.

mod client;
pub mod protocol;
mod server;
mod streams;

use std::net::{Ipv6Addr, SocketAddr};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::store::{Store, StoreError};
use crate::validate::Invalid;
pub use client::ClientOptions;
use protocol::ProtocolError;

#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("the server is busy running a test; try again later")]
    Busy,
    #[error("the server refused the test (iperf3 error {ierrno}, errno {errno})")]
    Refused { ierrno: i32, errno: i32 },
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    #[error("cannot listen on port {port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("no network test {0}")]
    NotFound(i64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Caps a test asks for cannot exceed, on either side.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_seconds: u64,
    pub max_streams: u32,
    pub max_block: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_seconds: 300,
            max_streams: 16,
            max_block: 1 << 20,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// nasd served a client's test.
    Server,
    /// nasd ran the test against a server.
    Client,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The client sends.
    Forward,
    /// The server sends (`-R`).
    Reverse,
    /// Both send at once (`--bidir`).
    Bidirectional,
}

impl Mode {
    fn from_flags(reverse: bool, bidirectional: bool) -> Self {
        match (reverse, bidirectional) {
            (_, true) => Mode::Bidirectional,
            (true, false) => Mode::Reverse,
            (false, false) => Mode::Forward,
        }
    }

    fn uploads(self) -> bool {
        matches!(self, Mode::Forward | Mode::Bidirectional)
    }

    fn downloads(self) -> bool {
        matches!(self, Mode::Reverse | Mode::Bidirectional)
    }
}

/// One direction of a test, counted by its receiver.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    pub bytes: u64,
    pub bits_per_second: f64,
    /// TCP retransmits on the sending side, when it could tell.
    pub retransmits: Option<u64>,
}

impl Flow {
    fn new(bytes: u64, seconds: f64, retransmits: Option<u64>) -> Self {
        Self {
            bytes,
            bits_per_second: if seconds > 0.0 {
                bytes as f64 * 8.0 / seconds
            } else {
                0.0
            },
            retransmits,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetRun {
    pub id: i64,
    /// Unix time the test ended.
    pub at: i64,
    pub role: Role,
    pub peer: String,
    pub mode: Mode,
    pub streams: u32,
    pub seconds: f64,
    pub client_to_server: Option<Flow>,
    pub server_to_client: Option<Flow>,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Every test, served or run, in the store.
pub struct NetHistory {
    store: Arc<Store>,
}

impl NetHistory {
    pub fn new(store: Arc<Store>) -> Self {
        Self { store }
    }

    fn record(&self, run: &NetRun) -> Option<i64> {
        let stored = serde_json::to_string(run)
            .map_err(|e| e.to_string())
            .and_then(|doc| {
                self.store
                    .add_net_run(run.at, &doc)
                    .map_err(|e| e.to_string())
            });
        match stored {
            Ok(id) => Some(id),
            Err(err) => {
                tracing::error!("network test not recorded: {err}");
                None
            }
        }
    }

    fn read(id: i64, doc: &str) -> Option<NetRun> {
        let mut run: NetRun = serde_json::from_str(doc).ok()?;
        run.id = id;
        Some(run)
    }

    pub fn list(&self, limit: u32) -> Result<Vec<NetRun>, NetError> {
        Ok(self
            .store
            .net_runs(limit)?
            .into_iter()
            .filter_map(|(id, doc)| Self::read(id, &doc))
            .collect())
    }

    pub fn get(&self, id: i64) -> Result<NetRun, NetError> {
        self.store
            .net_run(id)?
            .and_then(|doc| Self::read(id, &doc))
            .ok_or(NetError::NotFound(id))
    }
}

/// Stops the server task and waits until it is gone, so that its port is
/// closed when the caller says so.
async fn stop(task: JoinHandle<()>) {
    task.abort();
    let _ = task.await;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ServerStatus {
    pub enabled: bool,
    pub port: u16,
}

/// The network benchmarks: the history, the client, and the server task.
pub struct NetBench {
    history: Arc<NetHistory>,
    limits: Limits,
    server: tokio::sync::Mutex<Option<(u16, JoinHandle<()>)>>,
}

impl NetBench {
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            history: Arc::new(NetHistory::new(store)),
            limits: Limits::default(),
            server: tokio::sync::Mutex::new(None),
        }
    }

    pub fn history(&self) -> &NetHistory {
        &self.history
    }

    /// Serves iperf3 on `port` (every address, IPv4 and IPv6), or stops
    /// serving for 0. A port that cannot be bound leaves the server as it was.
    pub async fn set_server_port(&self, port: u16) -> Result<ServerStatus, NetError> {
        let mut server = self.server.lock().await;
        if port == 0 {
            if let Some((_, task)) = server.take() {
                stop(task).await;
            }
            return Ok(ServerStatus {
                enabled: false,
                port: 0,
            });
        }
        if let Some((current, _)) = &*server
            && *current == port
        {
            return Ok(ServerStatus {
                enabled: true,
                port,
            });
        }
        let any = SocketAddr::from((Ipv6Addr::UNSPECIFIED, port));
        let listener = match TcpListener::bind(any).await {
            Ok(listener) => listener,
            // A kernel without IPv6: IPv4 alone.
            Err(_) => TcpListener::bind(SocketAddr::from(([0, 0, 0, 0], port)))
                .await
                .map_err(|source| NetError::Bind { port, source })?,
        };
        if let Some((_, old)) = server.take() {
            stop(old).await;
        }
        let worker = Arc::new(server::Server::new(self.history.clone(), self.limits));
        *server = Some((port, tokio::spawn(worker.run(listener))));
        tracing::info!(port, "iperf3 server listening");
        Ok(ServerStatus {
            enabled: true,
            port,
        })
    }

    pub async fn server_status(&self) -> ServerStatus {
        match &*self.server.lock().await {
            Some((port, _)) => ServerStatus {
                enabled: true,
                port: *port,
            },
            None => ServerStatus {
                enabled: false,
                port: 0,
            },
        }
    }

    /// Runs a test against an iperf3 server and records it.
    pub async fn run_client(&self, options: &ClientOptions) -> Result<NetRun, NetError> {
        let mut run = client::run(options, &self.limits).await?;
        if let Some(id) = self.history.record(&run) {
            run.id = id;
        }
        Ok(run)
    }
}
