//! The real nasd binary serving on a loopback port with its own data
//! directory, and a small client for it. Shared by the system tests.
#![allow(dead_code)] // each test binary uses a different part

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use ureq::Agent;

pub const PASSWORD: &str = "correct horse battery";

pub struct Daemon {
    pub child: Child,
    pub base: String,
    pub host: String,
    pub data: tempfile::TempDir,
    pub agent: Agent,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Reply {
    pub status: u16,
    pub cookies: Vec<String>,
    pub body: Value,
}

/// A port free now (for servers that cannot pick their own, like smbd).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

impl Daemon {
    /// Against the HC4 fixture tree.
    pub fn start() -> Self {
        Self::start_with(&fixture("odroid-hc4"), "sample_interval_secs = 10\n", &[])
    }

    /// With `root`, a config file holding `config`, and extra global flags.
    /// The daemon picks its own port (127.0.0.1:0) and logs it.
    pub fn start_with(root: &Path, config_text: &str, flags: &[&str]) -> Self {
        let data = tempfile::tempdir().unwrap();
        let config = data.path().join("nasd.toml");
        std::fs::write(&config, config_text).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_nasd"))
            .arg("--config")
            .arg(&config)
            .arg("--root")
            .arg(root)
            .args(flags)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .arg("--data-dir")
            .arg(data.path().join("state"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nasd starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        // Drains the log for the daemon's whole life (a full pipe would
        // block it) and passes on the address it listens on.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let _ = tx.send(rest.trim_end_matches('/').to_owned());
                }
                if std::env::var_os("NASD_TEST_LOG").is_some() {
                    eprintln!("nasd: {line}");
                }
            }
        });
        let host = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("nasd did not start listening: {:?}", child.try_wait()));
        let agent: Agent = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Daemon {
            child,
            base: format!("http://{host}/api/v1"),
            host,
            data,
            agent,
        }
    }

    pub fn state_dir(&self) -> &Path {
        self.data.path()
    }

    pub fn token_path(&self) -> PathBuf {
        self.state_dir().join("state/setup-token")
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let url = format!("{}/{path}", self.base);
        macro_rules! with_headers {
            ($req:expr) => {{
                let mut req = $req;
                for (k, v) in headers {
                    req = req.header(*k, *v);
                }
                req
            }};
        }
        let mut response = match (method, body) {
            ("GET", _) => with_headers!(self.agent.get(&url)).call(),
            ("DELETE", _) => with_headers!(self.agent.delete(&url)).call(),
            ("PUT", Some(body)) => with_headers!(self.agent.put(&url)).send_json(&body),
            ("POST", Some(body)) => with_headers!(self.agent.post(&url)).send_json(&body),
            (other, _) => unreachable!("{other} without a body"),
        }
        .expect("HTTP exchange");
        let cookies = response
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            cookies,
            body,
        }
    }

    pub fn get(&self, path: &str, cookie: Option<&str>) -> Reply {
        let header = cookie.map(|c| format!("nasd_session={c}"));
        let headers: Vec<(&str, &str)> = header.iter().map(|h| ("cookie", h.as_str())).collect();
        self.request("GET", path, None, &headers)
    }

    pub fn post(&self, path: &str, body: Value, cookie: Option<&str>) -> Reply {
        let header = cookie.map(|c| format!("nasd_session={c}"));
        let mut headers: Vec<(&str, &str)> =
            header.iter().map(|h| ("cookie", h.as_str())).collect();
        let origin = format!("http://{}", self.host);
        headers.push(("origin", &origin));
        self.request("POST", path, Some(body), &headers)
    }

    /// A request with the session and this host's Origin.
    pub fn send(&self, method: &str, path: &str, body: Value, session: &str) -> Reply {
        let cookie = format!("nasd_session={session}");
        let origin = format!("http://{}", self.host);
        self.request(
            method,
            path,
            Some(body),
            &[("cookie", &cookie), ("origin", &origin)],
        )
    }

    pub fn setup_token(&self) -> String {
        std::fs::read_to_string(self.token_path())
            .unwrap()
            .trim()
            .to_owned()
    }

    /// Creates the administrator and returns the session token.
    pub fn set_up(&self) -> String {
        let token = self.setup_token();
        let reply = self.post(
            "setup",
            json!({"token": token, "username": "admin", "password": PASSWORD}),
            None,
        );
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        session_from(&reply)
    }

    pub fn login(&self, password: &str) -> Reply {
        self.post(
            "login",
            json!({"username": "admin", "password": password}),
            None,
        )
    }
}

pub fn session_from(reply: &Reply) -> String {
    let cookie = reply
        .cookies
        .iter()
        .find(|c| c.starts_with("nasd_session="))
        .expect("a session cookie");
    let value = cookie["nasd_session=".len()..].split(';').next().unwrap();
    assert_eq!(value.len(), 64, "{cookie}");
    value.to_owned()
}

/// Makes a file immutable (even to root) until dropped.
pub struct Immutable(PathBuf);

impl Immutable {
    pub fn new(path: PathBuf) -> Self {
        assert!(
            Command::new("chattr")
                .arg("+i")
                .arg(&path)
                .status()
                .unwrap()
                .success()
        );
        Immutable(path)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}
