//! An iperf3 client: `nasd bench net --peer HOST` against any iperf3 server
//! or another nasd.

use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::protocol::{self as p, Params, ProtocolError, Results, with_timeout};
use super::streams::{self, CpuClock};
use super::{Flow, Limits, Mode, NetError, NetRun, Role};
use crate::validate::Invalid;

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientOptions {
    /// `host`, `host:port` or `[v6]:port`; the port defaults to 5201.
    pub peer: String,
    #[serde(default)]
    pub reverse: bool,
    #[serde(default)]
    pub bidir: bool,
    #[serde(default = "one")]
    pub parallel: u32,
    #[serde(default = "ten")]
    pub time: u32,
}

fn one() -> u32 {
    1
}

fn ten() -> u32 {
    10
}

const BLOCK_LEN: usize = 128 * 1024;

impl ClientOptions {
    pub fn check(&self, limits: &Limits) -> Result<(), Invalid> {
        if self.reverse && self.bidir {
            return Err(Invalid::new("reverse", "cannot be combined with bidir"));
        }
        if !(1..=limits.max_streams).contains(&self.parallel) {
            return Err(Invalid::new(
                "parallel",
                format!("must be 1 to {}", limits.max_streams),
            ));
        }
        if !(1..=limits.max_seconds).contains(&u64::from(self.time)) {
            return Err(Invalid::new(
                "time",
                format!("must be 1 to {} seconds", limits.max_seconds),
            ));
        }
        let host_ok = !self.peer.is_empty()
            && self.peer.len() <= 255
            && self
                .peer
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c));
        if !host_ok {
            return Err(Invalid::new(
                "peer",
                "must be a host name or address, with an optional :port",
            ));
        }
        Ok(())
    }

    /// `host:port`, with iperf3's port when none is given.
    fn address(&self) -> String {
        let has_port = match self.peer.rsplit_once(':') {
            Some((host, port)) => {
                port.parse::<u16>().is_ok() && (!host.contains(':') || host.ends_with(']'))
            }
            None => false,
        };
        if has_port {
            self.peer.clone()
        } else if self.peer.contains(':') && !self.peer.starts_with('[') {
            format!("[{}]:5201", self.peer)
        } else {
            format!("{}:5201", self.peer)
        }
    }
}

pub async fn run(options: &ClientOptions, limits: &Limits) -> Result<NetRun, NetError> {
    options.check(limits)?;
    let mode = Mode::from_flags(options.reverse, options.bidir);
    let parallel = options.parallel as usize;
    let count = if mode == Mode::Bidirectional {
        2 * parallel
    } else {
        parallel
    };
    let address = options.address();
    let connect = || async {
        let socket = tokio::time::timeout(p::CONTROL_TIMEOUT, TcpStream::connect(&address))
            .await
            .map_err(|_| ProtocolError::Timeout)??;
        let _ = socket.set_nodelay(true);
        Ok::<_, ProtocolError>(socket)
    };
    let cookie = p::make_cookie();
    let mut control = connect().await?;
    let peer = control
        .peer_addr()
        .map_or_else(|_| address.clone(), |a| a.to_string());
    tokio::io::AsyncWriteExt::write_all(&mut control, &cookie)
        .await
        .map_err(ProtocolError::from)?;

    let params = Params {
        tcp: true,
        time: f64::from(options.time),
        parallel: parallel as f64,
        reverse: options.reverse,
        bidirectional: options.bidir,
        len: BLOCK_LEN as f64,
        pacing_timer: 1000.0,
        client_version: Some("3.12".into()),
        ..Params::default()
    };
    let mut sockets = Vec::new();
    let mut running = None;
    // Data connections stay open until the results are in, as iperf3's do.
    let mut finished_streams = Vec::new();
    loop {
        let state = with_timeout(p::read_state(&mut control)).await?;
        match state {
            p::PARAM_EXCHANGE => p::write_json(&mut control, &params).await?,
            p::CREATE_STREAMS => {
                for _ in 0..count {
                    let mut socket = connect().await?;
                    tokio::io::AsyncWriteExt::write_all(&mut socket, &cookie)
                        .await
                        .map_err(ProtocolError::from)?;
                    sockets.push(socket);
                }
            }
            p::TEST_START => {}
            p::TEST_RUNNING => {
                // Client's view: forward sends, reverse receives;
                // bidirectional sends on the first half.
                let (stop_tx, stop_rx) = watch::channel(false);
                let handles: Vec<_> = std::mem::take(&mut sockets)
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let sending = match mode {
                            Mode::Forward => true,
                            Mode::Reverse => false,
                            Mode::Bidirectional => i < parallel,
                        };
                        streams::spawn(s, sending, BLOCK_LEN, stop_rx.clone())
                    })
                    .collect();
                let started = Instant::now();
                let cpu = CpuClock::start();
                tokio::time::sleep(Duration::from_secs(u64::from(options.time))).await;
                let _ = stop_tx.send(true);
                let (totals, open) = streams::join(handles).await;
                finished_streams = open;
                let seconds = started.elapsed().as_secs_f64();
                p::write_state(&mut control, p::TEST_END).await?;
                running = Some((totals, seconds, cpu));
            }
            p::EXCHANGE_RESULTS => {
                let Some((totals, seconds, cpu)) = &running else {
                    return Err(protocol_violation("results before the test ran"));
                };
                let (total, user, system) = cpu.utilisation();
                let ours = Results {
                    cpu_util_total: total,
                    cpu_util_user: user,
                    cpu_util_system: system,
                    sender_has_retransmits: if totals.iter().any(|t| t.sending) {
                        i64::from(totals.iter().any(|t| t.retransmits.is_some()))
                    } else {
                        -1
                    },
                    streams: streams::stream_results(totals, *seconds),
                };
                p::write_json(&mut control, &ours).await?;
                let theirs: Results = with_timeout(p::read_json(&mut control)).await?;
                let run = client_run(peer.clone(), mode, parallel, *seconds, totals, &theirs);
                // Wait for DISPLAY_RESULTS, then say goodbye.
                let next = with_timeout(p::read_state(&mut control)).await?;
                if next == p::DISPLAY_RESULTS {
                    p::write_state(&mut control, p::IPERF_DONE).await?;
                }
                drop(finished_streams);
                return Ok(run);
            }
            p::ACCESS_DENIED => return Err(NetError::Busy),
            p::SERVER_ERROR => {
                let ierrno = control.read_i32().await.unwrap_or(0);
                let errno = control.read_i32().await.unwrap_or(0);
                return Err(NetError::Refused { ierrno, errno });
            }
            p::SERVER_TERMINATE => return Err(protocol_violation("the server ended the test")),
            other => return Err(protocol_violation(&format!("unexpected state {other}"))),
        }
    }
}

fn protocol_violation(what: &str) -> NetError {
    NetError::Protocol(ProtocolError::Io(std::io::Error::other(what.to_owned())))
}

/// The run as the client saw it: the server's receiving streams give the
/// client-to-server bytes, this side's the other way.
fn client_run(
    peer: String,
    mode: Mode,
    streams: usize,
    seconds: f64,
    ours: &[streams::StreamTotals],
    theirs: &Results,
) -> NetRun {
    NetRun {
        id: 0,
        at: super::now(),
        role: Role::Client,
        peer,
        mode,
        streams: streams as u32,
        seconds,
        client_to_server: mode.uploads().then(|| {
            Flow::new(
                streams::peer_received(theirs, ours),
                seconds,
                streams::sent_retransmits(ours),
            )
        }),
        server_to_client: mode.downloads().then(|| {
            Flow::new(
                streams::received(ours),
                seconds,
                streams::peer_retransmits(theirs, ours),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(peer: &str) -> ClientOptions {
        ClientOptions {
            peer: peer.into(),
            reverse: false,
            bidir: false,
            parallel: 1,
            time: 10,
        }
    }

    #[test]
    fn peers_get_iperf3s_port_unless_they_name_one() {
        assert_eq!(options("nas.local").address(), "nas.local:5201");
        assert_eq!(options("10.0.0.2:5300").address(), "10.0.0.2:5300");
        assert_eq!(options("fd00::2").address(), "[fd00::2]:5201");
        assert_eq!(options("[fd00::2]:5300").address(), "[fd00::2]:5300");
    }

    #[test]
    fn options_are_checked_by_field() {
        let limits = Limits::default();
        assert!(options("nas").check(&limits).is_ok());
        assert_eq!(
            options("a b; reboot").check(&limits).unwrap_err().field,
            "peer"
        );
        let mut o = options("nas");
        o.parallel = 64;
        assert_eq!(o.check(&limits).unwrap_err().field, "parallel");
        o.parallel = 1;
        o.time = 0;
        assert_eq!(o.check(&limits).unwrap_err().field, "time");
        o.time = 5;
        o.reverse = true;
        o.bidir = true;
        assert_eq!(o.check(&limits).unwrap_err().field, "reverse");
    }
}
