//! The API over a real socket: the real nasd binary serving on a loopback
//! port, with its own data directory, reading the HC4 fixture tree (the
//! board is not on this machine; see tests/fixtures/README.md).

mod common;

use std::time::Duration;

use common::{Daemon, PASSWORD, session_from};
use serde_json::{Value, json};

#[test]
fn health_is_public_and_says_setup_is_needed() {
    let d = Daemon::start();
    let reply = d.get("health", None);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["status"], "ok");
    assert_eq!(reply.body["setup_required"], true);
}

#[test]
fn the_setup_token_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let d = Daemon::start();
    let mode = std::fs::metadata(d.token_path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(d.setup_token().len(), 64);
}

#[test]
fn without_a_session_every_other_route_is_401_json() {
    let d = Daemon::start();
    for path in ["system", "session", "no-such-route"] {
        let reply = d.get(path, None);
        assert_eq!(reply.status, 401, "{path}");
        assert_eq!(reply.body["error"], "not logged in", "{path}");
    }
    let reply = d.get("system", Some(&"0".repeat(64)));
    assert_eq!(reply.status, 401, "a made-up session is no session");
}

#[test]
fn setup_without_or_with_a_wrong_token_creates_nothing() {
    let d = Daemon::start();
    let missing = d.post(
        "setup",
        json!({"username": "admin", "password": PASSWORD}),
        None,
    );
    assert_eq!(missing.status, 400);
    assert_eq!(missing.body["field"], "token");
    let wrong = d.post(
        "setup",
        json!({"token": "f".repeat(64), "username": "admin", "password": PASSWORD}),
        None,
    );
    assert_eq!(wrong.status, 403);
    assert_eq!(wrong.body["field"], "token");
    assert!(wrong.cookies.is_empty());
    let bad_name = d.post(
        "setup",
        json!({"token": d.setup_token(), "username": "Ad min", "password": PASSWORD}),
        None,
    );
    assert_eq!(bad_name.status, 400);
    assert_eq!(bad_name.body["field"], "username");
    assert!(
        bad_name.body["error"]
            .as_str()
            .unwrap()
            .contains("lowercase letters")
    );
    let short = d.post(
        "setup",
        json!({"token": d.setup_token(), "username": "admin", "password": "short"}),
        None,
    );
    assert_eq!(short.status, 400);
    assert_eq!(short.body["field"], "password");
    assert_eq!(d.get("health", None).body["setup_required"], true);
    assert!(
        d.token_path().exists(),
        "the token survives failed attempts"
    );
}

#[test]
fn setup_with_the_token_creates_the_admin_burns_the_token_and_logs_in() {
    let d = Daemon::start();
    let token = d.setup_token();
    let reply = d.post(
        "setup",
        json!({"token": token, "username": "admin", "password": PASSWORD}),
        None,
    );
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["username"], "admin");
    let cookie = reply
        .cookies
        .iter()
        .find(|c| c.starts_with("nasd_session="))
        .unwrap();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie} lacks {attribute}");
    }
    assert!(!cookie.contains("Secure"), "plain http: no Secure flag");
    assert!(!d.token_path().exists(), "the token file is removed");
    assert_eq!(d.get("health", None).body["setup_required"], false);

    let session = session_from(&reply);
    let system = d.get("system", Some(&session));
    assert_eq!(system.status, 200);
    assert_eq!(system.body["board"]["model"], "Hardkernel ODROID-HC4");
    assert_eq!(system.body["cpu"]["clusters"].as_array().unwrap().len(), 1);

    let again = d.post(
        "setup",
        json!({"token": token, "username": "eve", "password": PASSWORD}),
        None,
    );
    assert_eq!(again.status, 409);
    assert_eq!(d.login(PASSWORD).status, 200);
}

#[test]
fn login_refuses_wrong_passwords_and_unknown_users_alike() {
    let d = Daemon::start();
    d.set_up();
    let wrong = d.login("not the password");
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.body["error"], "wrong username or password");
    assert!(wrong.cookies.is_empty());
    let unknown = d.post(
        "login",
        json!({"username": "root", "password": PASSWORD}),
        None,
    );
    assert_eq!(unknown.status, 401);
    assert_eq!(unknown.body, wrong.body);
    let empty = d.post("login", json!({"username": "admin"}), None);
    assert_eq!(empty.status, 400);
    assert_eq!(empty.body["field"], "password");
    let ok = d.login(PASSWORD);
    assert_eq!(ok.status, 200);
    let me = d.get("session", Some(&session_from(&ok)));
    assert_eq!(me.body["username"], "admin");
}

#[test]
fn repeated_failed_logins_are_throttled_even_for_the_right_password() {
    let d = Daemon::start();
    d.set_up();
    for attempt in 1..=5 {
        assert_eq!(d.login("guess guess").status, 401, "attempt {attempt}");
    }
    let url = format!("{}/login", d.base);
    let resp = d
        .agent
        .post(&url)
        .send_json(json!({"username": "admin", "password": PASSWORD}))
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    std::thread::sleep(Duration::from_secs(retry));
    assert_eq!(
        d.login(PASSWORD).status,
        200,
        "after the wait the right password works"
    );
}

#[test]
fn a_foreign_origin_is_refused_even_with_good_credentials() {
    let d = Daemon::start();
    let session = d.set_up();
    let body = json!({"username": "admin", "password": PASSWORD});
    let foreign = d.request(
        "POST",
        "login",
        Some(body.clone()),
        &[("origin", "http://evil.example")],
    );
    assert_eq!(foreign.status, 403);
    assert_eq!(foreign.body["field"], "Origin");
    assert!(foreign.cookies.is_empty());
    let cookie = format!("nasd_session={session}");
    let logout = d.request(
        "POST",
        "logout",
        Some(json!({})),
        &[("origin", "http://evil.example"), ("cookie", &cookie)],
    );
    assert_eq!(logout.status, 403);
    assert_eq!(
        d.get("system", Some(&session)).status,
        200,
        "the refused logout changed nothing"
    );
    // A tool without an Origin header (curl, scripts) is judged by its session.
    let tool = d.request("POST", "login", Some(body), &[]);
    assert_eq!(tool.status, 200);
}

#[test]
fn logout_ends_the_session() {
    let d = Daemon::start();
    let session = d.set_up();
    let reply = d.post("logout", json!({}), Some(&session));
    assert_eq!(reply.status, 204);
    assert!(
        reply
            .cookies
            .iter()
            .any(|c| c.starts_with("nasd_session=;") && c.contains("Max-Age=0"))
    );
    assert_eq!(d.get("system", Some(&session)).status, 401);
    assert_eq!(d.post("logout", json!({}), Some(&session)).status, 401);
}

#[test]
fn password_change_ends_the_other_sessions_only() {
    let d = Daemon::start();
    let first = d.set_up();
    let second = session_from(&d.login(PASSWORD));
    let wrong = d.post(
        "password",
        json!({"current_password": "nope nope", "new_password": "a new password"}),
        Some(&first),
    );
    assert_eq!(wrong.status, 403);
    assert_eq!(wrong.body["field"], "current_password");
    let weak = d.post(
        "password",
        json!({"current_password": PASSWORD, "new_password": "short"}),
        Some(&first),
    );
    assert_eq!(weak.status, 400);
    assert_eq!(weak.body["field"], "new_password");
    assert_eq!(
        d.get("system", Some(&second)).status,
        200,
        "failed changes end nothing"
    );

    let ok = d.post(
        "password",
        json!({"current_password": PASSWORD, "new_password": "a new password"}),
        Some(&first),
    );
    assert_eq!(ok.status, 204);
    assert_eq!(d.get("system", Some(&first)).status, 200);
    assert_eq!(d.get("system", Some(&second)).status, 401);
    assert_eq!(d.login(PASSWORD).status, 401);
    assert_eq!(d.login("a new password").status, 200);
}

#[test]
fn malformed_requests_get_json_errors() {
    let d = Daemon::start();
    let session = d.set_up();
    let cookie = format!("nasd_session={session}");
    let url = format!("{}/login", d.base);
    let mut resp = d
        .agent
        .post(&url)
        .header("content-type", "application/json")
        .send("{not json")
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let body: Value = resp.body_mut().read_json().unwrap();
    assert!(body["error"].as_str().unwrap().starts_with("request body"));
    let unknown = d.request("GET", "no-such-route", None, &[("cookie", &cookie)]);
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["error"], "no such API route");
}

#[test]
fn the_web_ui_is_served_with_protective_headers() {
    let d = Daemon::start();
    let mut resp = d.agent.get(format!("http://{}/", d.host)).call().unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let headers = resp.headers().clone();
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(
        headers["cache-control"], "no-cache",
        "a new UI shows at once"
    );
    let html = resp.body_mut().read_to_string().unwrap();
    // The built UI (make ui) loads one hashed script.
    let script = html
        .split("src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no script in the page (run `make ui` first): {html}"));
    assert!(script.starts_with("/assets/index-"), "{script}");
    let js = d
        .agent
        .get(format!("http://{}{script}", d.host))
        .header("accept-encoding", "gzip")
        .call()
        .unwrap();
    assert!(
        js.headers()["content-type"]
            .to_str()
            .unwrap()
            .contains("javascript")
    );
    assert_eq!(js.headers()["content-encoding"], "gzip");
    assert!(
        js.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable")
    );
    let plain = d
        .agent
        .get(format!("http://{}{script}", d.host))
        .call()
        .unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    let missing = d
        .agent
        .get(format!("http://{}/nope.html", d.host))
        .call()
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
}
