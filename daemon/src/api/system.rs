//! `/api/v1/system/*` and `/api/v1/sessions`: the box's name and clock,
//! the daemon's log lines, reboot and shutdown, the user's sessions.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::error::ApiError;
use super::session::CurrentSession;
use crate::auth::SessionInfo;
use crate::host::runner::Runner;
use crate::system::{self, Clock, PowerRequest};

pub async fn clock() -> Json<Clock> {
    Json(system::clock())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostnameRequest {
    hostname: String,
}

pub async fn set_hostname(
    State(state): State<AppState>,
    body: Result<Json<HostnameRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(req) = body?;
    system::set_hostname(&state.host, &Runner::default(), &req.hostname).await?;
    Ok(Json(json!({ "hostname": req.hostname })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    lines: Option<u32>,
}

pub async fn log(query: Result<Query<LogQuery>, QueryRejection>) -> Result<Json<Value>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    let lines = system::log_lines(&Runner::default(), q.lines.unwrap_or(100)).await;
    Ok(Json(json!({ "lines": lines })))
}

/// Reboot or shutdown; 202 as the machine goes down.
pub async fn power(
    State(state): State<AppState>,
    body: Result<Json<PowerRequest>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let Json(req) = body?;
    system::power(&state.host, &Runner::default(), &req).await?;
    Ok(StatusCode::ACCEPTED)
}

pub async fn sessions(
    State(state): State<AppState>,
    axum::Extension(session): axum::Extension<CurrentSession>,
) -> Result<Json<Vec<SessionInfo>>, ApiError> {
    Ok(Json(state.auth.sessions(&session.user, &session.token)?))
}

pub async fn end_session(
    State(state): State<AppState>,
    axum::Extension(session): axum::Extension<CurrentSession>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.auth.end_session(&session.user, &id)? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no session {id}"),
        ))
    }
}
