//! The data connections of a test: each either sends blocks as fast as the
//! socket takes them or reads and counts, until told to stop.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::protocol::{Results, StreamResult, stream_id};

/// What one data connection did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamTotals {
    pub sending: bool,
    pub bytes: u64,
    /// From the kernel's TCP_INFO, for sending streams.
    pub retransmits: Option<u64>,
}

/// Total retransmitted segments of a connection, from TCP_INFO.
fn retransmits(stream: &TcpStream) -> Option<u64> {
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` is a writable tcp_info of `len` bytes and the fd is a
    // live TCP socket owned by `stream` for the duration of the call.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &mut len,
        )
    };
    (rc == 0).then(|| u64::from(info.tcpi_total_retrans))
}

/// A stopped stream: its figures, and its connection, which the caller
/// closes when the protocol says so.
pub type Stopped = (StreamTotals, TcpStream);

/// Starts a stream: sends blocks of `block_len` bytes, or counts what
/// arrives, until `stop` turns true or the peer closes.
pub fn spawn(
    mut socket: TcpStream,
    sending: bool,
    block_len: usize,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<Stopped> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; block_len.max(1)];
        let mut bytes = 0u64;
        loop {
            if *stop.borrow() {
                break;
            }
            let step = if sending {
                tokio::select! {
                    _ = stop.changed() => break,
                    written = socket.write(&buf) => written,
                }
            } else {
                tokio::select! {
                    _ = stop.changed() => break,
                    read = socket.read(&mut buf) => read,
                }
            };
            match step {
                Ok(0) | Err(_) => break,
                Ok(n) => bytes = bytes.saturating_add(n as u64),
            }
        }
        let totals = StreamTotals {
            sending,
            bytes,
            retransmits: if sending { retransmits(&socket) } else { None },
        };
        (totals, socket)
    })
}

/// Collects the streams' totals, and their connections, once stopped.
pub async fn join(handles: Vec<JoinHandle<Stopped>>) -> (Vec<StreamTotals>, Vec<TcpStream>) {
    let mut totals = Vec::with_capacity(handles.len());
    let mut sockets = Vec::with_capacity(handles.len());
    for handle in handles {
        // A stream task only ends by returning; a panic would be a bug,
        // and then the stream counts as having moved nothing.
        match handle.await {
            Ok((t, socket)) => {
                totals.push(t);
                sockets.push(socket);
            }
            Err(_) => totals.push(StreamTotals {
                sending: false,
                bytes: 0,
                retransmits: None,
            }),
        }
    }
    (totals, sockets)
}

/// CPU time this process used, for iperf3's utilisation figures.
pub struct CpuClock {
    started: Instant,
    user: Duration,
    system: Duration,
}

fn rusage() -> (Duration, Duration) {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    (tv(usage.ru_utime), tv(usage.ru_stime))
}

impl CpuClock {
    pub fn start() -> Self {
        let (user, system) = rusage();
        Self {
            started: Instant::now(),
            user,
            system,
        }
    }

    /// (total, user, system) as percentages of the elapsed wall time.
    pub fn utilisation(&self) -> (f64, f64, f64) {
        let (user, system) = rusage();
        let wall = self.started.elapsed().as_secs_f64().max(1e-9);
        let pct = |d: Duration| 100.0 * d.as_secs_f64() / wall;
        let (u, s) = (
            pct(user.saturating_sub(self.user)),
            pct(system.saturating_sub(self.system)),
        );
        (u + s, u, s)
    }
}

/// Bytes this side received on its receiving streams.
pub fn received(ours: &[StreamTotals]) -> u64 {
    ours.iter().filter(|t| !t.sending).map(|t| t.bytes).sum()
}

/// Retransmits on this side's sending streams; `None` if any is unknown.
pub fn sent_retransmits(ours: &[StreamTotals]) -> Option<u64> {
    ours.iter()
        .filter(|t| t.sending)
        .map(|t| t.retransmits)
        .sum()
}

/// Bytes the peer received on the streams this side sent on (streams pair
/// up by position: both sides number them in connection order).
pub fn peer_received(theirs: &Results, ours: &[StreamTotals]) -> u64 {
    theirs
        .streams
        .iter()
        .zip(ours)
        .filter(|(_, mine)| mine.sending)
        .map(|(s, _)| s.bytes)
        .sum()
}

/// Retransmits the peer reported on the streams it sent on, if it could.
pub fn peer_retransmits(theirs: &Results, ours: &[StreamTotals]) -> Option<u64> {
    if theirs.sender_has_retransmits != 1 {
        return None;
    }
    theirs
        .streams
        .iter()
        .zip(ours)
        .filter(|(_, mine)| !mine.sending)
        .map(|(s, _)| u64::try_from(s.retransmits).ok())
        .sum()
}

/// This side's per-stream results, as sent in the results exchange.
pub fn stream_results(totals: &[StreamTotals], seconds: f64) -> Vec<StreamResult> {
    totals
        .iter()
        .enumerate()
        .map(|(i, t)| StreamResult {
            id: stream_id(i),
            bytes: t.bytes,
            retransmits: t.retransmits.map_or(-1, |r| r as i64),
            jitter: 0.0,
            errors: 0,
            packets: 0,
            start_time: 0.0,
            end_time: seconds,
        })
        .collect()
}
