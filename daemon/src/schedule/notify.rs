//! Notifications: events delivered by webhook (a JSON POST that ntfy and
//! Gotify both take) and by e-mail over SMTP, each channel from its own
//! minimum severity, with an optional daily digest. Secrets (the webhook
//! token, the SMTP password) are stored, never shown.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::store::{Event, Severity};
use crate::validate::Invalid;

const SEND_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    /// Plain connection upgraded with STARTTLS (port 587).
    Starttls,
    /// TLS from the first byte (port 465).
    Tls,
    /// No encryption: only for a relay on the local network.
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Webhook {
    /// ntfy: the server (https://ntfy.sh) with `topic` set; Gotify:
    /// https://host/message with the app token as `token`.
    pub url: String,
    pub topic: Option<String>,
    /// Sent as `Authorization: Bearer` (ntfy access tokens, Gotify app
    /// tokens).
    pub token: Option<String>,
    pub min_severity: Severity,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Email {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub username: Option<String>,
    pub password: Option<String>,
    pub from: String,
    pub to: Vec<String>,
    pub min_severity: Severity,
}

/// The stored settings, secrets included.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub webhook: Option<Webhook>,
    pub email: Option<Email>,
    /// Local hour (0-23) of a daily digest of every event; None: no digest.
    pub digest_hour: Option<u8>,
}

/// What the API shows: the settings with each secret replaced by whether
/// it is set.
pub fn redacted(settings: &Settings) -> Value {
    json!({
        "webhook": settings.webhook.as_ref().map(|w| json!({
            "url": shown_url(&w.url),
            "topic": w.topic,
            "token_set": w.token.is_some(),
            "min_severity": w.min_severity,
        })),
        "email": settings.email.as_ref().map(|e| json!({
            "host": e.host,
            "port": e.port,
            "security": e.security,
            "username": e.username,
            "password_set": e.password.is_some(),
            "from": e.from,
            "to": e.to,
            "min_severity": e.min_severity,
        })),
        "digest_hour": settings.digest_hour,
    })
}

/// A change of settings. A secret left out keeps its stored value; an
/// empty one removes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub webhook: Option<WebhookRequest>,
    pub email: Option<EmailRequest>,
    pub digest_hour: Option<u8>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookRequest {
    pub url: String,
    pub topic: Option<String>,
    pub token: Option<String>,
    #[serde(default = "warning")]
    pub min_severity: Severity,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailRequest {
    pub host: String,
    pub port: Option<u16>,
    #[serde(default = "starttls")]
    pub security: Security,
    pub username: Option<String>,
    pub password: Option<String>,
    pub from: String,
    pub to: Vec<String>,
    #[serde(default = "warning")]
    pub min_severity: Severity,
}

fn warning() -> Severity {
    Severity::Warning
}

fn starttls() -> Security {
    Security::Starttls
}

fn printable(field: &str, value: &str, max: usize) -> Result<(), Invalid> {
    if value.is_empty()
        || value.len() > max
        || value.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Invalid::new(
            field,
            format!("must be 1 to {max} characters without spaces"),
        ));
    }
    Ok(())
}

/// A secret from a request: None keeps `stored`, "" clears it.
fn secret(
    field: &str,
    given: Option<String>,
    stored: Option<&String>,
) -> Result<Option<String>, Invalid> {
    match given {
        None => Ok(stored.cloned()),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) => {
            if s.len() > 512 || s.chars().any(char::is_control) {
                return Err(Invalid::new(
                    field,
                    "must be at most 512 characters, no control characters",
                ));
            }
            Ok(Some(s))
        }
    }
}

fn address(field: &str, text: &str) -> Result<(), Invalid> {
    text.parse::<lettre::Address>()
        .map(drop)
        .map_err(|_| Invalid::new(field, format!("'{text}' is not an e-mail address")))
}

impl Request {
    /// The settings this request makes on top of `stored` (whose secrets it
    /// may keep). Nothing is stored when a field is bad.
    pub fn apply(self, stored: &Settings) -> Result<Settings, Invalid> {
        let webhook = match self.webhook {
            None => None,
            Some(w) => {
                let url_ok = (w.url.starts_with("https://") || w.url.starts_with("http://"))
                    && w.url.len() <= 2048
                    && !w.url.chars().any(|c| c.is_whitespace() || c.is_control());
                if !url_ok {
                    return Err(Invalid::new(
                        "webhook.url",
                        "must be an http:// or https:// URL without spaces",
                    ));
                }
                let authority = w
                    .url
                    .split("://")
                    .nth(1)
                    .and_then(|rest| rest.split(['/', '?']).next())
                    .unwrap_or("");
                if authority.contains('@') {
                    return Err(Invalid::new(
                        "webhook.url",
                        "must not carry a user or password: give a token in `token`",
                    ));
                }
                if let Some(topic) = &w.topic {
                    let ok = !topic.is_empty()
                        && topic.len() <= 64
                        && topic
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c));
                    if !ok {
                        return Err(Invalid::new(
                            "webhook.topic",
                            "must be 1 to 64 letters, digits, - or _",
                        ));
                    }
                }
                let token = secret(
                    "webhook.token",
                    w.token,
                    stored.webhook.as_ref().and_then(|s| s.token.as_ref()),
                )?;
                Some(Webhook {
                    url: w.url,
                    topic: w.topic,
                    token,
                    min_severity: w.min_severity,
                })
            }
        };
        let email = match self.email {
            None => None,
            Some(e) => {
                let host_ok = !e.host.is_empty()
                    && e.host.len() <= 253
                    && e.host
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c));
                if !host_ok {
                    return Err(Invalid::new("email.host", "must be a host name or address"));
                }
                if let Some(user) = &e.username {
                    printable("email.username", user, 256)?;
                }
                address("email.from", &e.from)?;
                if e.to.is_empty() || e.to.len() > 10 {
                    return Err(Invalid::new("email.to", "must list 1 to 10 addresses"));
                }
                for to in &e.to {
                    address("email.to", to)?;
                }
                let password = secret(
                    "email.password",
                    e.password,
                    stored.email.as_ref().and_then(|s| s.password.as_ref()),
                )?;
                let port = e.port.unwrap_or(match e.security {
                    Security::Starttls => 587,
                    Security::Tls => 465,
                    Security::None => 25,
                });
                if port == 0 {
                    return Err(Invalid::new("email.port", "must be 1 to 65535"));
                }
                if e.security == Security::None && password.is_some() {
                    return Err(Invalid::new(
                        "email.security",
                        "a password needs starttls or tls: `none` would send it in clear",
                    ));
                }
                Some(Email {
                    host: e.host,
                    port,
                    security: e.security,
                    username: e.username,
                    password,
                    from: e.from,
                    to: e.to,
                    min_severity: e.min_severity,
                })
            }
        };
        if self.digest_hour.is_some_and(|h| h > 23) {
            return Err(Invalid::new("digest_hour", "must be 0 to 23"));
        }
        Ok(Settings {
            webhook,
            email,
            digest_hour: self.digest_hour,
        })
    }
}

/// What one notification says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub title: String,
    pub body: String,
    pub severity: Severity,
}

impl Message {
    pub fn of_event(event: &Event, hostname: &str) -> Message {
        Message {
            title: format!(
                "{hostname}: {} from {}",
                event.severity.as_str(),
                event.source
            ),
            body: event.message.clone(),
            severity: event.severity,
        }
    }

    /// One message listing the day's events, newest last.
    pub fn digest(events: &[Event], hostname: &str, zone: &jiff::tz::TimeZone) -> Message {
        let worst = events
            .iter()
            .map(|e| e.severity)
            .max()
            .unwrap_or(Severity::Info);
        let mut body = if events.is_empty() {
            "Nothing happened in the last 24 hours.\n".to_owned()
        } else {
            String::new()
        };
        for e in events {
            let at = jiff::Timestamp::from_second(e.at)
                .map(|t| t.to_zoned(zone.clone()).strftime("%H:%M").to_string())
                .unwrap_or_default();
            body.push_str(&format!(
                "{at} {} {}: {}\n",
                e.severity.as_str(),
                e.source,
                e.message
            ));
        }
        Message {
            title: format!("{hostname}: daily digest, {} events", events.len()),
            body,
            severity: worst,
        }
    }

    /// The webhook's JSON: ntfy reads topic, title, message and priority
    /// (1-5); Gotify reads title, message and priority and ignores the rest.
    pub fn webhook_body(&self, topic: Option<&str>) -> Value {
        let priority = match self.severity {
            Severity::Info => 3,
            Severity::Warning => 4,
            Severity::Critical => 5,
        };
        let mut body = json!({
            "title": self.title,
            "message": self.body,
            "priority": priority,
            "severity": self.severity,
        });
        if let Some(topic) = topic {
            body["topic"] = json!(topic);
        }
        body
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("webhook: {0}")]
    Webhook(String),
    /// The server refused this message (4xx): sending it again would not
    /// help, so it is passed over.
    #[error("webhook: the server refused the message: {0}")]
    Refused(String),
    #[error("e-mail: {0}")]
    Email(String),
}

/// A URL as it may be shown or logged: without a query, which can carry a
/// token (Gotify's `?token=`, ntfy's `?auth=`).
fn shown_url(url: &str) -> String {
    match url.split_once('?') {
        Some((base, _)) => format!("{base}?…"),
        None => url.to_owned(),
    }
}

/// Messages over this many bytes are cut (ntfy takes 4096 by default).
const MAX_BODY: usize = 3500;

fn truncated(text: &str) -> String {
    if text.len() <= MAX_BODY {
        return text.to_owned();
    }
    let mut cut = MAX_BODY;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}\n… ({} more bytes)", &text[..cut], text.len() - cut)
}

pub async fn send_webhook(hook: &Webhook, message: &Message) -> Result<(), SendError> {
    let hook = hook.clone();
    let mut body = message.webhook_body(hook.topic.as_deref());
    body["message"] = json!(truncated(&message.body));
    tokio::task::spawn_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(SEND_TIMEOUT))
            .build()
            .into();
        let mut request = agent.post(&hook.url);
        if let Some(token) = &hook.token {
            request = request.header("Authorization", &format!("Bearer {token}"));
        }
        request.send_json(&body).map(drop).map_err(|e| match e {
            ureq::Error::StatusCode(code) if (400..500).contains(&code) => {
                SendError::Refused(format!("HTTP {code} from {}", shown_url(&hook.url)))
            }
            // Error texts may quote the URL, whose query may hold a token.
            other => {
                SendError::Webhook(other.to_string().replace(&hook.url, &shown_url(&hook.url)))
            }
        })
    })
    .await
    .map_err(|e| SendError::Webhook(e.to_string()))?
}

pub async fn send_email(mail: &Email, message: &Message) -> Result<(), SendError> {
    use lettre::message::header::ContentType;
    use lettre::transport::smtp::authentication::Credentials;
    use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
    let err = |e: &dyn std::fmt::Display| SendError::Email(e.to_string());
    let mut builder = lettre::Message::builder()
        .from(mail.from.parse().map_err(|e| err(&e))?)
        .subject(format!("[nasd] {}", message.title))
        .header(ContentType::TEXT_PLAIN);
    for to in &mail.to {
        builder = builder.to(to.parse().map_err(|e| err(&e))?);
    }
    let email = builder.body(message.body.clone()).map_err(|e| err(&e))?;
    let transport = match mail.security {
        Security::Starttls => {
            AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&mail.host).map_err(|e| err(&e))?
        }
        Security::Tls => {
            AsyncSmtpTransport::<Tokio1Executor>::relay(&mail.host).map_err(|e| err(&e))?
        }
        Security::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&mail.host),
    };
    let mut transport = transport.port(mail.port).timeout(Some(SEND_TIMEOUT));
    if let (Some(user), Some(password)) = (&mail.username, &mail.password) {
        transport = transport.credentials(Credentials::new(user.clone(), password.clone()));
    }
    transport
        .build()
        .send(email)
        .await
        .map(drop)
        .map_err(|e| err(&e))
}

const SETTINGS_KEY: &str = "notifications";
/// The last event id each channel has had, and the day of the last digest.
const STATE_KEY: &str = "notifications_state";
const DELIVER_EVERY: Duration = Duration::from_secs(15);

#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("stored notification settings are unreadable: {0}")]
    Corrupt(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct State {
    /// The last event each channel has had.
    webhook: Option<i64>,
    email: Option<i64>,
    /// The day each channel last had its digest.
    webhook_digest: Option<String>,
    email_digest: Option<String>,
}

/// Delivers events as they are logged, and the daily digest.
pub struct Notifier {
    store: std::sync::Arc<crate::store::Store>,
    hostname: String,
    zone: jiff::tz::TimeZone,
    /// Delivery and a settings change both rewrite the cursors.
    state_lock: tokio::sync::Mutex<()>,
}

impl Notifier {
    pub fn new(
        store: std::sync::Arc<crate::store::Store>,
        hostname: String,
        zone: jiff::tz::TimeZone,
    ) -> Self {
        Notifier {
            store,
            hostname,
            zone,
            state_lock: tokio::sync::Mutex::new(()),
        }
    }

    pub fn settings(&self) -> Result<Settings, NotifyError> {
        match self.store.setting(SETTINGS_KEY)? {
            None => Ok(Settings::default()),
            Some(text) => {
                serde_json::from_str(&text).map_err(|e| NotifyError::Corrupt(e.to_string()))
            }
        }
    }

    /// Stores new settings; answers with what the API may show. A channel
    /// set up now gets the events from now on.
    pub async fn put(&self, request: Request) -> Result<Value, NotifyError> {
        let _state = self.state_lock.lock().await;
        let settings = request.apply(&self.settings()?)?;
        let text =
            serde_json::to_string(&settings).map_err(|e| NotifyError::Corrupt(e.to_string()))?;
        let mut state = self.state()?;
        let newest = self.store.last_event_id()?;
        state.webhook = settings
            .webhook
            .as_ref()
            .map(|_| state.webhook.unwrap_or(newest));
        state.email = settings
            .email
            .as_ref()
            .map(|_| state.email.unwrap_or(newest));
        self.store.put_setting(SETTINGS_KEY, &text)?;
        self.put_state(&state)?;
        Ok(redacted(&settings))
    }

    /// Sends a test message on every channel; says per channel what
    /// happened.
    pub async fn send_test(&self) -> Result<Value, NotifyError> {
        let settings = self.settings()?;
        let message = Message {
            title: format!("{}: test", self.hostname),
            body: "This is a test notification from nasd.".into(),
            severity: Severity::Info,
        };
        let outcome = |r: Result<(), SendError>| match r {
            Ok(()) => json!({"sent": true}),
            Err(e) => json!({"sent": false, "error": e.to_string()}),
        };
        let mut result = json!({});
        if let Some(hook) = &settings.webhook {
            result["webhook"] = outcome(send_webhook(hook, &message).await);
        }
        if let Some(mail) = &settings.email {
            result["email"] = outcome(send_email(mail, &message).await);
        }
        Ok(result)
    }

    fn state(&self) -> Result<State, NotifyError> {
        Ok(self
            .store
            .setting(STATE_KEY)?
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default())
    }

    fn put_state(&self, state: &State) -> Result<(), NotifyError> {
        let text = serde_json::to_string(state).map_err(|e| NotifyError::Corrupt(e.to_string()))?;
        Ok(self.store.put_setting(STATE_KEY, &text)?)
    }

    /// Sends what each channel has not had yet. A channel that cannot be
    /// reached keeps its place and is retried next time; the other is not
    /// held back. The state is saved only when it changed (the card).
    pub async fn deliver(&self) -> Result<(), NotifyError> {
        let (settings, before) = {
            let _state = self.state_lock.lock().await;
            (self.settings()?, self.state()?)
        };
        // A channel without a place (state lost) starts from now.
        let newest = self.store.last_event_id()?;
        let mut after = before.clone();
        if let Some(hook) = &settings.webhook {
            let cursor = after.webhook.get_or_insert(newest);
            for event in self.store.events_after(*cursor, 100)? {
                if event.severity >= hook.min_severity {
                    match send_webhook(hook, &Message::of_event(&event, &self.hostname)).await {
                        Ok(()) => {}
                        Err(err @ SendError::Refused(_)) => {
                            tracing::warn!("event #{} passed over: {err}", event.id)
                        }
                        Err(err) => {
                            tracing::warn!("notification not delivered, will retry: {err}");
                            break;
                        }
                    }
                }
                *cursor = event.id;
            }
        }
        if let Some(mail) = &settings.email {
            let cursor = after.email.get_or_insert(newest);
            for event in self.store.events_after(*cursor, 100)? {
                if event.severity >= mail.min_severity
                    && let Err(err) =
                        send_email(mail, &Message::of_event(&event, &self.hostname)).await
                {
                    tracing::warn!("notification not delivered, will retry: {err}");
                    break;
                }
                *cursor = event.id;
            }
        }
        if let Some(hour) = settings.digest_hour {
            let now = jiff::Timestamp::now().to_zoned(self.zone.clone());
            let today = now.strftime("%Y-%m-%d").to_string();
            if now.hour() >= hour as i8 {
                let since = now.timestamp().as_second() - 86_400;
                let events = self.store.events_since(since, 500)?;
                let message = Message::digest(&events, &self.hostname, &self.zone);
                if let Some(hook) = &settings.webhook
                    && after.webhook_digest.as_deref() != Some(&today)
                {
                    match send_webhook(hook, &message).await {
                        Ok(()) => after.webhook_digest = Some(today.clone()),
                        Err(err) => tracing::warn!("digest not delivered: {err}"),
                    }
                }
                if let Some(mail) = &settings.email
                    && after.email_digest.as_deref() != Some(&today)
                {
                    match send_email(mail, &message).await {
                        Ok(()) => after.email_digest = Some(today.clone()),
                        Err(err) => tracing::warn!("digest not delivered: {err}"),
                    }
                }
            }
        }
        if after == before {
            return Ok(());
        }
        // Merged with what a settings change wrote meanwhile: a cursor only
        // moves forward, and a channel removed meanwhile stays removed.
        let _state = self.state_lock.lock().await;
        let mut current = self.state()?;
        let settings = self.settings()?;
        let forward = |now: Option<i64>, sent: Option<i64>| match (now, sent) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        current.webhook = settings
            .webhook
            .as_ref()
            .and(forward(current.webhook, after.webhook));
        current.email = settings
            .email
            .as_ref()
            .and(forward(current.email, after.email));
        current.webhook_digest = after.webhook_digest;
        current.email_digest = after.email_digest;
        self.put_state(&current)
    }

    pub async fn run(self: std::sync::Arc<Self>) {
        loop {
            if let Err(err) = self.deliver().await {
                tracing::error!("notifications: {err}");
            }
            tokio::time::sleep(DELIVER_EVERY).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(value: Value) -> Result<Settings, Invalid> {
        let req: Request =
            serde_json::from_value(value).map_err(|e| Invalid::new("json", e.to_string()))?;
        req.apply(&Settings::default())
    }

    #[test]
    fn settings_are_checked_by_field_and_secrets_are_never_shown() {
        let s = request(json!({
            "webhook": {"url": "https://ntfy.sh", "topic": "my-nas", "token": "tk_secret"},
            "email": {"host": "smtp.example.com", "from": "nas@example.com", "to": ["me@example.com"],
                      "username": "nas", "password": "hunter2"},
            "digest_hour": 7
        }))
        .unwrap();
        assert_eq!(s.email.as_ref().unwrap().port, 587, "STARTTLS by default");
        let gotify =
            request(json!({"webhook": {"url": "https://push.example/message?token=AbC"}})).unwrap();
        assert!(!redacted(&gotify).to_string().contains("AbC"));
        assert!(truncated(&"x".repeat(10_000)).len() < 4000);
        let shown = redacted(&s).to_string();
        assert!(
            !shown.contains("tk_secret") && !shown.contains("hunter2"),
            "{shown}"
        );
        assert!(shown.contains("\"password_set\":true") && shown.contains("\"token_set\":true"));
        // Left out: kept. Empty: removed.
        let keep: Request = serde_json::from_value(json!({
            "webhook": {"url": "https://ntfy.sh", "topic": "my-nas"},
            "email": {"host": "smtp.example.com", "from": "nas@example.com", "to": ["me@example.com"], "password": ""}
        }))
        .unwrap();
        let kept = keep.apply(&s).unwrap();
        assert_eq!(kept.webhook.unwrap().token.as_deref(), Some("tk_secret"));
        assert_eq!(kept.email.unwrap().password, None);
        for (bad, field) in [
            (json!({"webhook": {"url": "ftp://x"}}), "webhook.url"),
            (
                json!({"webhook": {"url": "https://x", "topic": "a b"}}),
                "webhook.topic",
            ),
            (
                json!({"email": {"host": "h", "from": "not-an-address", "to": ["a@b.c"]}}),
                "email.from",
            ),
            (
                json!({"email": {"host": "h", "from": "a@b.c", "to": []}}),
                "email.to",
            ),
            (
                json!({"email": {"host": "h;rm", "from": "a@b.c", "to": ["a@b.c"]}}),
                "email.host",
            ),
            (json!({"digest_hour": 24}), "digest_hour"),
            (
                json!({"webhook": {"url": "https://user:pw@ntfy.sh"}}),
                "webhook.url",
            ),
            (
                json!({"email": {"host": "h", "security": "none", "password": "x", "from": "a@b.c", "to": ["a@b.c"]}}),
                "email.security",
            ),
        ] {
            assert_eq!(request(bad).unwrap_err().field, field);
        }
    }

    #[test]
    fn messages_carry_severity_as_ntfy_and_gotify_priority() {
        let event = Event {
            id: 1,
            at: 0,
            source: "bench".into(),
            severity: Severity::Critical,
            message: "disk got slower".into(),
        };
        let m = Message::of_event(&event, "nasd-ab12");
        let body = m.webhook_body(Some("alerts"));
        assert_eq!(body["priority"], 5);
        assert_eq!(body["topic"], "alerts");
        assert_eq!(body["message"], "disk got slower");
        assert_eq!(body["title"], "nasd-ab12: critical from bench");
        let digest = Message::digest(&[event], "nasd-ab12", &jiff::tz::TimeZone::UTC);
        assert!(
            digest
                .body
                .contains("00:00 critical bench: disk got slower"),
            "{}",
            digest.body
        );
        assert_eq!(digest.severity, Severity::Critical);
    }
}
