//! `/api/v1/metrics/*`, `/api/v1/events`, and the Prometheus endpoint
//! `/metrics`, which takes its own bearer token instead of a session so a
//! Prometheus server can scrape it.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::AppState;
use super::error::ApiError;
use crate::monitor::card::CardWrites;
use crate::monitor::{Columns, DEFAULT_POINTS, OwnWrites};
use crate::store::Event;

const TOKEN_KEY: &str = "prometheus_token_sha256";

pub async fn series(State(state): State<AppState>) -> Result<Json<Vec<String>>, ApiError> {
    Ok(Json(state.monitor.series()?))
}

#[derive(Deserialize)]
pub struct QueryParams {
    series: String,
    from: Option<i64>,
    to: Option<i64>,
    points: Option<u32>,
}

pub async fn query(
    State(state): State<AppState>,
    Query(q): Query<QueryParams>,
) -> Result<Json<Columns>, ApiError> {
    let to = q.to.unwrap_or_else(unix_now);
    let from = q.from.unwrap_or(to.saturating_sub(3600));
    let monitor = state.monitor.clone();
    let columns = tokio::task::spawn_blocking(move || {
        monitor.query(&q.series, from, to, q.points.unwrap_or(DEFAULT_POINTS))
    })
    .await
    .map_err(|e| ApiError::internal(&e))??;
    Ok(Json(columns))
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardWritesQuery {
    days: Option<u32>,
}

/// Bytes written to the system disk (the SD card) per day.
pub async fn card_writes(
    State(state): State<AppState>,
    Query(q): Query<CardWritesQuery>,
) -> Result<Json<CardWrites>, ApiError> {
    let list = state.disks.list().await?;
    let disk = list
        .disks
        .iter()
        .find(|d| d.system)
        .map(|d| d.volume.name.clone());
    let monitor = state.monitor.clone();
    let writes =
        tokio::task::spawn_blocking(move || monitor.card_writes(disk, q.days.unwrap_or(30)))
            .await
            .map_err(|e| ApiError::internal(&e))??;
    Ok(Json(writes))
}

pub async fn own_writes(State(state): State<AppState>) -> Json<OwnWrites> {
    Json(state.monitor.own_writes())
}

pub async fn events(State(state): State<AppState>) -> Result<Json<Vec<Event>>, ApiError> {
    let events = state
        .auth
        .store()
        .all_events(200)
        .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(events))
}

/// Makes a new scrape token (the old one stops working); shown once.
pub async fn new_token(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let token = crate::auth::random_token();
    let digest = hex::encode(Sha256::digest(token.as_bytes()));
    state
        .auth
        .store()
        .put_setting(TOKEN_KEY, &digest)
        .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(json!({ "token": token })))
}

pub async fn revoke_token(State(state): State<AppState>) -> Result<StatusCode, ApiError> {
    state
        .auth
        .store()
        .put_setting(TOKEN_KEY, "")
        .map_err(|e| ApiError::internal(&e))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Prometheus text exposition, for `Authorization: Bearer <token>`.
pub async fn prometheus(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let expected = state
        .auth
        .store()
        .setting(TOKEN_KEY)
        .ok()
        .flatten()
        .unwrap_or_default();
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| hex::encode(Sha256::digest(t.trim().as_bytes())));
    let allowed = !expected.is_empty()
        && given.is_some_and(|g| {
            subtle::ConstantTimeEq::ct_eq(g.as_bytes(), expected.as_bytes()).into()
        });
    if !allowed {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "a scrape token is needed: Authorization: Bearer <token>",
        )
        .into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.monitor.prometheus(),
    )
        .into_response()
}
