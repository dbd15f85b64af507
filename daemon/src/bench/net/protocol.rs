//! The iperf3 control protocol (as iperf 3.x speaks it over TCP): a
//! 37-byte cookie, one signed byte per state change, and JSON documents
//! behind a 4-byte big-endian length.

use std::io;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// 36 characters of an ASCII cookie and a NUL.
pub const COOKIE_SIZE: usize = 37;
/// iperf3 sets no limit; a parameter or result document is far smaller.
pub const MAX_JSON_BYTES: u32 = 64 * 1024;
/// How long a peer may take to send its next control message.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

pub const TEST_START: i8 = 1;
pub const TEST_RUNNING: i8 = 2;
pub const TEST_END: i8 = 4;
pub const PARAM_EXCHANGE: i8 = 9;
pub const CREATE_STREAMS: i8 = 10;
pub const SERVER_TERMINATE: i8 = 11;
pub const CLIENT_TERMINATE: i8 = 12;
pub const EXCHANGE_RESULTS: i8 = 13;
pub const DISPLAY_RESULTS: i8 = 14;
pub const IPERF_DONE: i8 = 16;
pub const ACCESS_DENIED: i8 = -1;
pub const SERVER_ERROR: i8 = -2;

/// iperf3's error numbers that a server sends after SERVER_ERROR.
pub const IEDURATION: i32 = 5;
pub const IENUMSTREAMS: i32 = 6;
pub const IEBLOCKSIZE: i32 = 7;
pub const IEUNIMP: i32 = 13;

pub type Cookie = [u8; COOKIE_SIZE];

#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("control connection: {0}")]
    Io(#[from] io::Error),
    #[error("the peer did not answer within {} s", CONTROL_TIMEOUT.as_secs())]
    Timeout,
    #[error("a control message of {0} bytes is more than nasd accepts")]
    TooLarge(u32),
    #[error("malformed control message: {0}")]
    Json(#[from] serde_json::Error),
}

/// A cookie as iperf3 makes them: letters and digits 2-7, then NUL.
pub fn make_cookie() -> Cookie {
    use rand_core::{OsRng, RngCore};
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut random = [0u8; COOKIE_SIZE - 1];
    OsRng.fill_bytes(&mut random);
    let mut cookie = [0u8; COOKIE_SIZE];
    for (out, r) in cookie.iter_mut().zip(random) {
        *out = ALPHABET[usize::from(r % 32)];
    }
    cookie
}

pub async fn with_timeout<T>(
    work: impl Future<Output = Result<T, ProtocolError>>,
) -> Result<T, ProtocolError> {
    tokio::time::timeout(CONTROL_TIMEOUT, work)
        .await
        .map_err(|_| ProtocolError::Timeout)?
}

pub async fn read_cookie<R: AsyncRead + Unpin>(r: &mut R) -> Result<Cookie, ProtocolError> {
    let mut cookie = [0u8; COOKIE_SIZE];
    r.read_exact(&mut cookie).await?;
    Ok(cookie)
}

pub async fn read_state<R: AsyncRead + Unpin>(r: &mut R) -> Result<i8, ProtocolError> {
    Ok(r.read_i8().await?)
}

pub async fn write_state<W: AsyncWrite + Unpin>(w: &mut W, state: i8) -> Result<(), ProtocolError> {
    w.write_i8(state).await?;
    Ok(())
}

pub async fn read_json<R: AsyncRead + Unpin, T: DeserializeOwned>(
    r: &mut R,
) -> Result<T, ProtocolError> {
    let len = r.read_u32().await?;
    if len > MAX_JSON_BYTES {
        return Err(ProtocolError::TooLarge(len));
    }
    let mut buf = vec![0u8; len as usize];
    r.read_exact(&mut buf).await?;
    Ok(serde_json::from_slice(&buf)?)
}

pub async fn write_json<W: AsyncWrite + Unpin, T: Serialize>(
    w: &mut W,
    value: &T,
) -> Result<(), ProtocolError> {
    let body = serde_json::to_vec(value)?;
    let len = u32::try_from(body.len()).map_err(|_| ProtocolError::TooLarge(u32::MAX))?;
    w.write_u32(len).await?;
    w.write_all(&body).await?;
    Ok(())
}

/// The test a client asks for. Numbers are read as floats: cJSON may print
/// integers either way.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Params {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tcp: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub udp: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sctp: bool,
    #[serde(default)]
    pub omit: f64,
    #[serde(default)]
    pub time: f64,
    #[serde(default)]
    pub num: f64,
    #[serde(default)]
    pub blockcount: f64,
    #[serde(default)]
    pub parallel: f64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reverse: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bidirectional: bool,
    #[serde(default)]
    pub len: f64,
    #[serde(default)]
    pub pacing_timer: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
}

/// A count as iperf3 prints it: its -1 ("none") sometimes comes out as
/// 2^64 - 1, and cJSON may print any number as a float.
fn lenient_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = serde_json::Number::deserialize(d)?;
    Ok(n.as_i64()
        .or_else(|| n.as_u64().map(|_| -1))
        .or_else(|| n.as_f64().map(|f| f as i64))
        .unwrap_or(-1))
}

/// One stream's figures as each side reports them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StreamResult {
    #[serde(deserialize_with = "lenient_count")]
    pub id: i64,
    pub bytes: u64,
    /// -1 when this side did not send on the stream or cannot tell.
    #[serde(deserialize_with = "lenient_count")]
    pub retransmits: i64,
    #[serde(default)]
    pub jitter: f64,
    #[serde(default, deserialize_with = "lenient_count")]
    pub errors: i64,
    #[serde(default, deserialize_with = "lenient_count")]
    pub packets: i64,
    #[serde(default)]
    pub start_time: f64,
    #[serde(default)]
    pub end_time: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Results {
    pub cpu_util_total: f64,
    pub cpu_util_user: f64,
    pub cpu_util_system: f64,
    /// 1 or 0 for a side that sent, -1 for one that only received.
    #[serde(deserialize_with = "lenient_count")]
    pub sender_has_retransmits: i64,
    pub streams: Vec<StreamResult>,
}

/// iperf3 numbers streams 1, 3, 4, 5...: the same on both sides, in the
/// order the data connections are made.
pub fn stream_id(index: usize) -> i64 {
    if index == 0 { 1 } else { index as i64 + 2 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_have_iperf3s_shape() {
        let cookie = make_cookie();
        assert_eq!(cookie[COOKIE_SIZE - 1], 0);
        assert!(
            cookie[..36]
                .iter()
                .all(|c| c.is_ascii_lowercase() || (b'2'..=b'7').contains(c))
        );
        assert_ne!(make_cookie(), cookie);
    }

    #[test]
    fn stream_ids_skip_two() {
        assert_eq!((0..4).map(stream_id).collect::<Vec<_>>(), [1, 3, 4, 5]);
    }

    #[test]
    fn a_stock_clients_parameters_parse() {
        let json = r#"{"tcp":true,"omit":0,"time":10,"num":0,"blockcount":0,"parallel":4,"reverse":true,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
        let p: Params = serde_json::from_str(json).unwrap();
        assert!(p.tcp && p.reverse && !p.bidirectional);
        assert_eq!((p.time, p.parallel, p.len), (10.0, 4.0, 131_072.0));
    }

    #[test]
    fn a_stock_clients_unsigned_minus_one_reads_as_minus_one() {
        let json = r#"{"cpu_util_total":1.5,"cpu_util_user":1,"cpu_util_system":0.5,"sender_has_retransmits":1,
            "streams":[{"id":1,"bytes":100,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0}]}"#;
        let r: Results = serde_json::from_str(json).unwrap();
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(r.streams[0].end_time, 0.0);
    }

    #[tokio::test]
    async fn json_frames_round_trip_and_oversize_is_refused() {
        let mut buf = Vec::new();
        write_json(&mut buf, &serde_json::json!({"a": 1}))
            .await
            .unwrap();
        assert_eq!(&buf[..4], &7u32.to_be_bytes());
        let back: serde_json::Value = read_json(&mut buf.as_slice()).await.unwrap();
        assert_eq!(back["a"], 1);
        let huge = (MAX_JSON_BYTES + 1).to_be_bytes();
        let err = read_json::<_, serde_json::Value>(&mut huge.as_slice())
            .await
            .unwrap_err();
        assert!(matches!(err, ProtocolError::TooLarge(_)));
        let truncated = [0u8, 0, 0, 10, b'{'];
        assert!(
            read_json::<_, serde_json::Value>(&mut truncated.as_slice())
                .await
                .is_err()
        );
    }
}
