//! Setup, login, logout, password change, and the guards every request
//! passes: the same-origin check for anything that changes state, and the
//! session check for everything but health, setup and login.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::error::ApiError;
use crate::auth::{AuthError, NewSession};
use crate::store::SessionUser;

pub const COOKIE_NAME: &str = "nasd_session";

/// The logged-in user and their token, put into the request by
/// [`require_session`] for the handlers behind it.
#[derive(Clone)]
pub struct CurrentSession {
    pub user: SessionUser,
    pub token: String,
}

#[derive(Deserialize)]
pub struct SetupRequest {
    #[serde(default)]
    token: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

#[derive(Deserialize)]
pub struct LoginRequest {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

#[derive(Deserialize)]
pub struct PasswordRequest {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
}

#[derive(Serialize)]
pub struct SessionInfo {
    username: String,
}

fn session_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.to_owned())
}

/// Behind a TLS-terminating proxy the browser speaks https; the cookie must
/// then never travel over plain http.
fn served_over_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .is_some_and(|proto| proto.as_bytes().eq_ignore_ascii_case(b"https"))
}

fn session_cookie(value: &str, max_age_secs: i64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!(
        "{COOKIE_NAME}={value}; Path=/; Max-Age={max_age_secs}; HttpOnly; SameSite=Strict{secure}"
    );
    // The token is hex, so the header value is always valid.
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn logged_in(headers: &HeaderMap, username: String, session: NewSession) -> Response {
    let cookie = session_cookie(
        &session.token,
        session.max_age_secs,
        served_over_tls(headers),
    );
    (
        [(header::SET_COOKIE, cookie)],
        Json(SessionInfo { username }),
    )
        .into_response()
}

pub async fn setup(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Json<SetupRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body?;
    let session = state
        .auth
        .setup(&req.token, &req.username, &req.password)
        .await?;
    tracing::info!(username = %req.username, "first administrator created; setup token burned");
    Ok(logged_in(&headers, req.username, session))
}

pub async fn login(
    State(state): State<AppState>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Result<Json<LoginRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body?;
    match state
        .auth
        .login(client.ip(), &req.username, &req.password)
        .await
    {
        Ok(session) => Ok(logged_in(&headers, req.username, session)),
        Err(err) => {
            if matches!(err, AuthError::BadCredentials) {
                tracing::warn!(username = %req.username, %client, "failed login");
            }
            Err(err.into())
        }
    }
}

pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    axum::Extension(session): axum::Extension<CurrentSession>,
) -> Result<Response, ApiError> {
    state.auth.logout(&session.token)?;
    let expired = session_cookie("", 0, served_over_tls(&headers));
    Ok(([(header::SET_COOKIE, expired)], StatusCode::NO_CONTENT).into_response())
}

pub async fn whoami(
    axum::Extension(session): axum::Extension<CurrentSession>,
) -> Json<SessionInfo> {
    Json(SessionInfo {
        username: session.user.username,
    })
}

pub async fn change_password(
    State(state): State<AppState>,
    axum::Extension(session): axum::Extension<CurrentSession>,
    body: Result<Json<PasswordRequest>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let Json(req) = body?;
    state
        .auth
        .change_password(
            &session.user,
            &session.token,
            &req.current_password,
            &req.new_password,
        )
        .await?;
    tracing::info!(username = %session.user.username, "password changed; other sessions ended");
    Ok(StatusCode::NO_CONTENT)
}

/// Lets a request through only with a live session.
pub async fn require_session(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let token = session_token(request.headers()).ok_or(AuthError::NoSession)?;
    let user = state.auth.session(&token)?;
    request
        .extensions_mut()
        .insert(CurrentSession { user, token });
    Ok(next.run(request).await)
}

/// Refuses a state-changing request that a page of another site made the
/// browser send (CSRF), judged by the Origin the browser attaches. Tools
/// such as curl send no Origin and are let through to the session check.
pub async fn same_origin(request: Request, next: Next) -> Result<Response, ApiError> {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if !safe && !is_same_origin(request.headers()) {
        return Err(
            ApiError::new(StatusCode::FORBIDDEN, "cross-origin request refused")
                .with_field("Origin"),
        );
    }
    Ok(next.run(request).await)
}

fn is_same_origin(headers: &HeaderMap) -> bool {
    if headers
        .get("sec-fetch-site")
        .is_some_and(|site| site.as_bytes() == b"cross-site")
    {
        return false;
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_authority = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, authority)| authority.trim_end_matches('/'));
    matches!((origin_authority, host), (Some(o), Some(h)) if o.eq_ignore_ascii_case(h))
}

/// Headers that keep the admin UI from being framed or fed foreign scripts.
pub async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'; base-uri 'none'"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn finds_the_session_cookie_among_others() {
        let h = headers(&[("cookie", "a=1; nasd_session=abc; b=2")]);
        assert_eq!(session_token(&h).as_deref(), Some("abc"));
        assert_eq!(session_token(&headers(&[("cookie", "nasd=x")])), None);
    }

    #[test]
    fn origin_must_match_host() {
        let same = headers(&[
            ("host", "nas.local:8080"),
            ("origin", "http://nas.local:8080"),
        ]);
        assert!(is_same_origin(&same));
        let foreign = headers(&[("host", "nas.local"), ("origin", "http://evil.example")]);
        assert!(!is_same_origin(&foreign));
        let null = headers(&[("host", "nas.local"), ("origin", "null")]);
        assert!(!is_same_origin(&null));
        assert!(is_same_origin(&headers(&[("host", "nas.local")])));
        let fetch = headers(&[("host", "nas.local"), ("sec-fetch-site", "cross-site")]);
        assert!(!is_same_origin(&fetch));
    }

    #[test]
    fn cookie_attributes() {
        let plain = session_cookie("abc", 60, false);
        assert_eq!(
            plain.to_str().unwrap(),
            "nasd_session=abc; Path=/; Max-Age=60; HttpOnly; SameSite=Strict"
        );
        assert!(
            session_cookie("abc", 60, true)
                .to_str()
                .unwrap()
                .ends_with("; Secure")
        );
    }
}
