//! `/api/v1/schedules`, `/api/v1/jobs` and `/api/v1/notifications`.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::error::ApiError;
use crate::schedule::ScheduleView;
use crate::schedule::model::{JobRun, ScheduleRequest};
use crate::schedule::notify;

pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<ScheduleView>>, ApiError> {
    Ok(Json(state.scheduler.list()?))
}

pub async fn add(
    State(state): State<AppState>,
    body: Result<Json<ScheduleRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<ScheduleView>), ApiError> {
    let Json(request) = body?;
    Ok((StatusCode::CREATED, Json(state.scheduler.add(request)?)))
}

pub async fn show(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Json<ScheduleView>, ApiError> {
    Ok(Json(state.scheduler.get(id)?))
}

pub async fn update(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    body: Result<Json<ScheduleRequest>, JsonRejection>,
) -> Result<Json<ScheduleView>, ApiError> {
    let Json(request) = body?;
    Ok(Json(state.scheduler.update(id, request)?))
}

pub async fn remove(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    state.scheduler.remove(id)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Runs a schedule now; 202 with its job runs (`GET /jobs/{id}` follows).
pub async fn run(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let jobs = state.scheduler.run_now(id)?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "jobs": jobs }))))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreviewQuery {
    cron: String,
}

/// The next runs of a cron expression, for the editor.
pub async fn preview(
    State(state): State<AppState>,
    query: Result<Query<PreviewQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    let runs = state
        .scheduler
        .preview(&q.cron, 3)
        .map_err(crate::schedule::ScheduleError::from)?;
    Ok(Json(json!({ "next_runs": runs })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobsQuery {
    limit: Option<u32>,
}

pub async fn jobs(
    State(state): State<AppState>,
    query: Result<Query<JobsQuery>, QueryRejection>,
) -> Result<Json<Vec<JobRun>>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    Ok(Json(
        state.scheduler.jobs(q.limit.unwrap_or(100).min(1000))?,
    ))
}

pub async fn job(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Json<JobRun>, ApiError> {
    Ok(Json(state.scheduler.job(id)?))
}

pub async fn cancel_job(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    state.scheduler.cancel(id)?;
    Ok(StatusCode::ACCEPTED)
}

/// The notification settings, secrets shown only as `*_set`.
pub async fn notifications(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    Ok(Json(notify::redacted(&state.notifier.settings()?)))
}

pub async fn set_notifications(
    State(state): State<AppState>,
    body: Result<Json<notify::Request>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(request) = body?;
    Ok(Json(state.notifier.put(request).await?))
}

/// Sends a test message on every channel; 200 with each channel's outcome.
pub async fn test_notifications(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    Ok(Json(state.notifier.send_test().await?))
}
