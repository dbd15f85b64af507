//! The iperf3 server and client against Debian's iperf3 3.12 on loopback.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{Daemon, fixture, free_port};
use serde_json::{Value, json};

struct Server {
    daemon: Daemon,
    session: String,
    port: u16,
}

impl Server {
    fn start() -> Self {
        let port = free_port();
        let daemon =
            Daemon::start_with(&fixture("bare-vm"), &format!("iperf3_port = {port}\n"), &[]);
        let session = daemon.set_up();
        Server {
            daemon,
            session,
            port,
        }
    }

    fn iperf3(&self, args: &[&str]) -> Output {
        Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &self.port.to_string(), "-t", "1"])
            .args(args)
            .output()
            .unwrap()
    }

    fn iperf3_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["-J"];
        all.extend(args);
        let out = self.iperf3(&all);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn runs(&self) -> Vec<Value> {
        self.daemon
            .get("bench/net", Some(&self.session))
            .body
            .as_array()
            .unwrap()
            .clone()
    }
}

#[test]
fn a_stock_client_measures_against_nasd_and_both_record_the_same_bytes() {
    let s = Server::start();
    let forward = s.iperf3_json(&[]);
    let received = forward["end"]["sum_received"]["bytes"].as_u64().unwrap();
    assert!(received > 1 << 20, "{received}");
    let runs = s.runs();
    assert_eq!(runs[0]["role"], "server");
    assert_eq!(runs[0]["mode"], "forward");
    assert_eq!(
        runs[0]["client_to_server"]["bytes"], received,
        "nasd counted what it received"
    );
    let retransmits = forward["end"]["sum_sent"]["retransmits"].as_u64().unwrap();
    assert_eq!(
        runs[0]["client_to_server"]["retransmits"], retransmits,
        "the client's TCP_INFO figure"
    );

    let reverse = s.iperf3_json(&["-R"]);
    let run = &s.runs()[0];
    assert_eq!(run["mode"], "reverse");
    assert_eq!(
        run["server_to_client"]["bytes"],
        reverse["end"]["sum_received"]["bytes"]
    );
    assert!(
        run["server_to_client"]["retransmits"].is_u64(),
        "nasd's own TCP_INFO"
    );

    let parallel = s.iperf3_json(&["-P", "4"]);
    assert_eq!(parallel["end"]["streams"].as_array().unwrap().len(), 4);
    let run = &s.runs()[0];
    assert_eq!(run["streams"], 4);
    assert_eq!(
        run["client_to_server"]["bytes"],
        parallel["end"]["sum_received"]["bytes"]
    );

    let bidir = s.iperf3_json(&["--bidir"]);
    let run = &s.runs()[0];
    assert_eq!(run["mode"], "bidirectional");
    assert_eq!(
        run["client_to_server"]["bytes"],
        bidir["end"]["sum_received"]["bytes"]
    );
    assert_eq!(
        run["server_to_client"]["bytes"],
        bidir["end"]["sum_received_bidir_reverse"]["bytes"]
    );
}

#[test]
fn a_second_client_is_told_the_server_is_busy() {
    let s = Server::start();
    let mut first = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &s.port.to_string(), "-t", "5"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Well inside the first test's 5 s, even on a slow machine.
    std::thread::sleep(Duration::from_millis(1500));
    let second = s.iperf3(&[]);
    assert!(!second.status.success());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&second.stdout),
        String::from_utf8_lossy(&second.stderr)
    );
    assert!(text.contains("the server is busy"), "{text}");
    assert!(
        first.wait().unwrap().success(),
        "the first test was not disturbed"
    );
}

#[test]
fn limits_are_refused_with_iperf3s_own_errors() {
    let s = Server::start();
    let long = s.iperf3(&["-t", "1000"]);
    assert!(!long.status.success());
    assert!(
        String::from_utf8_lossy(&long.stderr).contains("duration"),
        "{:?}",
        long
    );
    let udp = s.iperf3(&["-u"]);
    assert!(!udp.status.success(), "UDP is not offered");
    assert!(s.iperf3(&[]).status.success(), "still serving");
}

#[test]
fn garbage_on_the_control_port_leaves_the_server_serving() {
    let s = Server::start();
    let address = format!("127.0.0.1:{}", s.port);
    // One test at a time: each bad session must end before the next
    // connection, or that one is (rightly) told the server is busy.
    let settle = || std::thread::sleep(Duration::from_millis(200));
    // A port scan: connect and go.
    drop(TcpStream::connect(&address).unwrap());
    settle();
    // Noise instead of a cookie.
    let mut noise = TcpStream::connect(&address).unwrap();
    noise
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    drop(noise);
    settle();
    // A valid cookie, then a JSON length of 4 GiB.
    let mut huge = TcpStream::connect(&address).unwrap();
    huge.write_all(&[b'a'; 36]).unwrap();
    huge.write_all(&[0]).unwrap();
    let mut state = [0u8; 1];
    huge.read_exact(&mut state).unwrap();
    assert_eq!(state[0], 9, "PARAM_EXCHANGE");
    huge.write_all(&u32::MAX.to_be_bytes()).unwrap();
    let _ = huge.read(&mut state);
    drop(huge);
    settle();
    // A cookie, then JSON that is not JSON, then gone mid-message.
    let mut broken = TcpStream::connect(&address).unwrap();
    broken.write_all(&[b'b'; 36]).unwrap();
    broken.write_all(&[0]).unwrap();
    broken.read_exact(&mut state).unwrap();
    broken.write_all(&20u32.to_be_bytes()).unwrap();
    broken.write_all(b"{\"tcp\":tru").unwrap();
    drop(broken);
    std::thread::sleep(Duration::from_millis(300));
    let after = s.iperf3_json(&[]);
    assert!(after["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
    assert_eq!(s.runs().len(), 1, "only the real test was recorded");
}

#[test]
fn nasds_client_measures_a_stock_server_and_another_nasd() {
    let port = free_port();
    let mut stock = Command::new("iperf3")
        .args(["-s", "-1", "-J", "-p", &port.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let s = Server::start();
    let reply = s.daemon.send(
        "POST",
        "bench/net",
        json!({"peer": format!("127.0.0.1:{port}"), "time": 1}),
        &s.session,
    );
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let mut out = String::new();
    stock
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    stock.wait().unwrap();
    let server_view: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(reply.body["role"], "client");
    assert_eq!(
        reply.body["client_to_server"]["bytes"], server_view["end"]["sum_received"]["bytes"],
        "nasd reports what the stock server received"
    );

    // nasd against nasd, reversed, two streams.
    let other = Server::start();
    let reply = s.daemon.send(
        "POST",
        "bench/net",
        json!({"peer": format!("127.0.0.1:{}", other.port), "time": 1, "reverse": true, "parallel": 2}),
        &s.session,
    );
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let served = &other.runs()[0];
    assert_eq!(served["role"], "server");
    assert_eq!(served["streams"], 2);
    assert_eq!(
        served["server_to_client"]["bytes"],
        reply.body["server_to_client"]["bytes"]
    );
    let id = reply.body["id"].as_i64().unwrap();
    let shown = s.daemon.get(&format!("bench/net/{id}"), Some(&s.session));
    assert_eq!(shown.body, reply.body);

    let bad = s.daemon.send(
        "POST",
        "bench/net",
        json!({"peer": "x; reboot", "time": 1}),
        &s.session,
    );
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["field"], "peer");
}

#[test]
fn the_server_can_be_turned_off_and_moved() {
    let s = Server::start();
    let status = s.daemon.get("bench/net/server", Some(&s.session)).body;
    assert_eq!(status, json!({"enabled": true, "port": s.port}));
    let off = s
        .daemon
        .send("PUT", "bench/net/server", json!({"port": 0}), &s.session);
    assert_eq!(off.body["enabled"], false);
    assert!(TcpStream::connect(("127.0.0.1", s.port)).is_err());
    let new_port = free_port();
    let on = s.daemon.send(
        "PUT",
        "bench/net/server",
        json!({"port": new_port}),
        &s.session,
    );
    assert_eq!(on.body, json!({"enabled": true, "port": new_port}));
    let moved = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &new_port.to_string(), "-t", "1"])
        .output()
        .unwrap();
    assert!(moved.status.success());
}
