//! An iperf3 server inside the daemon: a stock `iperf3 -c nas.local` works
//! with nothing installed on the box, and every test lands in the history.
//!
//! One accept loop serves the port, as iperf3's does: while a test is
//! setting up its streams every new connection is one of them; while a test
//! runs, a newcomer gets ACCESS_DENIED at once; otherwise it is a new test.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::protocol::{self as p, Params, ProtocolError, Results, with_timeout};
use super::streams::{self, CpuClock, StreamTotals};
use super::{Flow, Limits, Mode, NetHistory, NetRun, Role};

enum Phase {
    Idle,
    /// Setting up: new connections are data streams for this test.
    CreatingStreams(mpsc::Sender<TcpStream>),
    Running,
}

pub struct Server {
    phase: Mutex<Phase>,
    history: Arc<NetHistory>,
    limits: Limits,
}

enum Route {
    Control,
    Data(mpsc::Sender<TcpStream>),
    Busy,
}

/// Puts the server back to idle however a session ends.
struct IdleOnDrop<'a>(&'a Mutex<Phase>);

impl Drop for IdleOnDrop<'_> {
    fn drop(&mut self) {
        *lock(self.0) = Phase::Idle;
    }
}

fn lock(phase: &Mutex<Phase>) -> std::sync::MutexGuard<'_, Phase> {
    phase
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why a test's parameters are refused, as iperf3's error number. Every
/// number comes from the network: NaN, negative and huge values are all
/// refused here, before any of them becomes a duration or a size.
fn refusal(params: &Params, limits: &Limits) -> Option<i32> {
    let whole = |v: f64, lo: f64, hi: f64| v.is_finite() && (lo..=hi).contains(&v);
    if !params.tcp || params.udp || params.sctp || params.num != 0.0 || params.blockcount != 0.0 {
        // UDP, SCTP and byte- or block-count ends are not implemented.
        return Some(p::IEUNIMP);
    }
    let max_seconds = limits.max_seconds as f64;
    if !whole(params.time, 1.0, max_seconds)
        || !whole(params.omit, 0.0, max_seconds)
        || params.time + params.omit > max_seconds
    {
        return Some(p::IEDURATION);
    }
    if !whole(params.parallel, 0.0, f64::from(limits.max_streams)) {
        return Some(p::IENUMSTREAMS);
    }
    if !whole(params.len, 0.0, limits.max_block as f64) {
        return Some(p::IEBLOCKSIZE);
    }
    None
}

impl Server {
    pub fn new(history: Arc<NetHistory>, limits: Limits) -> Self {
        Self {
            phase: Mutex::new(Phase::Idle),
            history,
            limits,
        }
    }

    /// Serves the listener until the task is aborted.
    pub async fn run(self: Arc<Self>, listener: TcpListener) {
        loop {
            let (socket, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: back off, go on.
                    tracing::warn!("iperf3 server: accept: {err}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let route = {
                let mut phase = lock(&self.phase);
                match &*phase {
                    Phase::Idle => {
                        *phase = Phase::Running;
                        Route::Control
                    }
                    Phase::CreatingStreams(tx) => Route::Data(tx.clone()),
                    Phase::Running => Route::Busy,
                }
            };
            match route {
                Route::Control => {
                    let server = self.clone();
                    tokio::spawn(async move {
                        let _idle = IdleOnDrop(&server.phase);
                        if let Err(err) = server.session(socket, peer).await {
                            tracing::info!(%peer, "iperf3 test ended early: {err}");
                        }
                    });
                }
                Route::Data(tx) => {
                    let _ = tx.try_send(socket);
                }
                Route::Busy => {
                    tokio::spawn(async move {
                        let mut socket = socket;
                        let _ = socket.write_i8(p::ACCESS_DENIED).await;
                    });
                }
            }
        }
    }

    async fn session(&self, mut control: TcpStream, peer: SocketAddr) -> Result<(), ProtocolError> {
        let _ = control.set_nodelay(true);
        let cookie = with_timeout(p::read_cookie(&mut control)).await?;
        p::write_state(&mut control, p::PARAM_EXCHANGE).await?;
        let params: Params = with_timeout(p::read_json(&mut control)).await?;
        if let Some(ierrno) = refusal(&params, &self.limits) {
            p::write_state(&mut control, p::SERVER_ERROR).await?;
            control.write_i32(ierrno).await?;
            control.write_i32(0).await?;
            return Ok(());
        }
        let parallel = params.parallel.max(1.0) as usize;
        let mode = Mode::from_flags(params.reverse, params.bidirectional);
        let count = if mode == Mode::Bidirectional {
            2 * parallel
        } else {
            parallel
        };
        let block_len = if params.len > 0.0 {
            params.len as usize
        } else {
            128 * 1024
        };

        let (tx, mut rx) = mpsc::channel(count);
        *lock(&self.phase) = Phase::CreatingStreams(tx);
        p::write_state(&mut control, p::CREATE_STREAMS).await?;
        // One deadline for the whole setup, and a few strangers at most:
        // a trickle of foreign connections must not hold the server.
        let setup = async {
            let mut sockets = Vec::with_capacity(count);
            let mut strangers = 0;
            while sockets.len() < count {
                let mut socket = rx.recv().await.ok_or(ProtocolError::Timeout)?;
                match with_timeout(p::read_cookie(&mut socket)).await {
                    Ok(c) if c == cookie => {
                        let _ = socket.set_nodelay(true);
                        sockets.push(socket);
                    }
                    // Not this test's: refused, as iperf3 does.
                    _ => {
                        let _ = socket.write_i8(p::ACCESS_DENIED).await;
                        strangers += 1;
                        if strangers > count + 4 {
                            return Err(ProtocolError::Timeout);
                        }
                    }
                }
            }
            Ok(sockets)
        };
        let sockets = tokio::time::timeout(p::CONTROL_TIMEOUT, setup)
            .await
            .map_err(|_| ProtocolError::Timeout)??;
        *lock(&self.phase) = Phase::Running;

        let cpu = CpuClock::start();
        p::write_state(&mut control, p::TEST_START).await?;
        p::write_state(&mut control, p::TEST_RUNNING).await?;
        let started = Instant::now();
        let (stop_tx, stop_rx) = watch::channel(false);
        // Server's view: forward receives, reverse sends; bidirectional
        // receives on the first half, sends on the second.
        let handles: Vec<_> = sockets
            .into_iter()
            .enumerate()
            .map(|(i, socket)| {
                let sending = match mode {
                    Mode::Forward => false,
                    Mode::Reverse => true,
                    Mode::Bidirectional => i >= parallel,
                };
                streams::spawn(socket, sending, block_len, stop_rx.clone())
            })
            .collect();

        // The client decides the end; a client that vanishes or never
        // ends is cut off after its own duration and a grace period.
        // refusal() bounded time and omit, so this cannot fail.
        let deadline = Duration::try_from_secs_f64(params.time + params.omit)
            .unwrap_or(Duration::from_secs(self.limits.max_seconds))
            + Duration::from_secs(40);
        let end = tokio::time::timeout(deadline, p::read_state(&mut control)).await;
        let _ = stop_tx.send(true);
        // iperf3 closes the data connections at TEST_END, before results:
        // a client receiving in reverse mode drains until they close.
        let (totals, sockets) = streams::join(handles).await;
        drop(sockets);
        let seconds = started.elapsed().as_secs_f64();
        match end {
            Ok(Ok(p::TEST_END)) => {}
            Ok(Ok(state)) => {
                return Err(ProtocolError::Io(std::io::Error::other(format!(
                    "the client ended the test (state {state})"
                ))));
            }
            Ok(Err(err)) => return Err(err),
            Err(_) => return Err(ProtocolError::Timeout),
        }

        p::write_state(&mut control, p::EXCHANGE_RESULTS).await?;
        let theirs: Results = with_timeout(p::read_json(&mut control)).await?;
        let (total, user, system) = cpu.utilisation();
        let sent_any = totals.iter().any(|t| t.sending);
        let ours = Results {
            cpu_util_total: total,
            cpu_util_user: user,
            cpu_util_system: system,
            sender_has_retransmits: if sent_any {
                i64::from(totals.iter().any(|t| t.retransmits.is_some()))
            } else {
                -1
            },
            streams: streams::stream_results(&totals, seconds),
        };
        p::write_json(&mut control, &ours).await?;
        p::write_state(&mut control, p::DISPLAY_RESULTS).await?;
        // IPERF_DONE, or the client just closing: either way it is over.
        let _ = with_timeout(p::read_state(&mut control)).await;

        let run = NetRun::from_server_side(peer, mode, parallel, seconds, &totals, &theirs);
        tracing::info!(%peer, mode = ?mode, streams = parallel, "iperf3 test served");
        self.history.record(&run);
        Ok(())
    }
}

impl NetRun {
    /// The run as the server saw it: its own receiving streams give the
    /// client-to-server bytes, the client's report the other way.
    fn from_server_side(
        peer: SocketAddr,
        mode: Mode,
        streams: usize,
        seconds: f64,
        ours: &[StreamTotals],
        theirs: &Results,
    ) -> Self {
        let received = streams::received(ours);
        let client_received = streams::peer_received(theirs, ours);
        NetRun {
            id: 0,
            at: super::now(),
            role: Role::Server,
            peer: peer.to_string(),
            mode,
            streams: streams as u32,
            seconds,
            client_to_server: mode
                .uploads()
                .then(|| Flow::new(received, seconds, streams::peer_retransmits(theirs, ours))),
            server_to_client: mode
                .downloads()
                .then(|| Flow::new(client_received, seconds, streams::sent_retransmits(ours))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(json: &str) -> Params {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn limits_refuse_with_iperf3_error_numbers() {
        let limits = Limits::default();
        assert_eq!(
            refusal(
                &params(r#"{"tcp":true,"time":10,"parallel":4,"len":131072}"#),
                &limits
            ),
            None
        );
        assert_eq!(
            refusal(&params(r#"{"udp":true,"time":10}"#), &limits),
            Some(p::IEUNIMP)
        );
        assert_eq!(
            refusal(&params(r#"{"tcp":true,"time":10,"num":1000000}"#), &limits),
            Some(p::IEUNIMP)
        );
        assert_eq!(
            refusal(&params(r#"{"tcp":true,"time":100000}"#), &limits),
            Some(p::IEDURATION)
        );
        assert_eq!(
            refusal(&params(r#"{"tcp":true,"time":10,"parallel":128}"#), &limits),
            Some(p::IENUMSTREAMS)
        );
        assert_eq!(
            refusal(
                &params(r#"{"tcp":true,"time":10,"len":100000000}"#),
                &limits
            ),
            Some(p::IEBLOCKSIZE)
        );
    }
}
