//! `/api/v1/bench/disk` and `/api/v1/bench/runs`: start a disk benchmark,
//! follow its progress, cancel it, list, show and compare runs.
//! `/api/v1/bench/net`: run a network test, list and show results, the
//! iperf3 server.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::error::ApiError;
use crate::bench::disk::{Comparison, DiskRequest, DiskRun};
use crate::bench::net::{ClientOptions, NetRun, ServerStatus};

/// Starts a run and answers at once (202) with the run and its progress;
/// `GET /api/v1/bench/runs/{id}` follows it.
pub async fn disk_run(
    State(state): State<AppState>,
    body: Result<Json<DiskRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<DiskRun>), ApiError> {
    let Json(request) = body?;
    let started = state.disk_bench.start(&request).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(state.disk_bench.get(started.id)?),
    ))
}

pub async fn disk_runs(State(state): State<AppState>) -> Result<Json<Vec<DiskRun>>, ApiError> {
    Ok(Json(state.disk_bench.list(100)?))
}

pub async fn disk_run_by_id(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Json<DiskRun>, ApiError> {
    Ok(Json(state.disk_bench.get(id)?))
}

pub async fn cancel_disk_run(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    state.disk_bench.cancel(id)?;
    Ok(StatusCode::ACCEPTED)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    a: i64,
    b: i64,
}

pub async fn compare_disk_runs(
    State(state): State<AppState>,
    query: Result<Query<CompareQuery>, QueryRejection>,
) -> Result<Json<Comparison>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    Ok(Json(state.disk_bench.compare(q.a, q.b)?))
}

pub async fn net_runs(State(state): State<AppState>) -> Result<Json<Vec<NetRun>>, ApiError> {
    Ok(Json(state.net.history().list(100)?))
}

pub async fn net_run_by_id(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Json<NetRun>, ApiError> {
    Ok(Json(state.net.history().get(id)?))
}

/// Runs a client test to completion (as long as its `time`) and answers
/// with the recorded result.
pub async fn net_run(
    State(state): State<AppState>,
    body: Result<Json<ClientOptions>, JsonRejection>,
) -> Result<Json<NetRun>, ApiError> {
    let Json(options) = body?;
    let net = state.net.clone();
    let run = tokio::spawn(async move { net.run_client(&options).await })
        .await
        .map_err(|e| ApiError::internal(&e))??;
    Ok(Json(run))
}

pub async fn net_server(State(state): State<AppState>) -> Json<ServerStatus> {
    Json(state.net.server_status().await)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerChange {
    /// 0 turns the server off.
    port: u16,
}

pub async fn set_net_server(
    State(state): State<AppState>,
    body: Result<Json<ServerChange>, JsonRejection>,
) -> Result<Json<ServerStatus>, ApiError> {
    let Json(change) = body?;
    Ok(Json(state.net.set_server_port(change.port).await?))
}
