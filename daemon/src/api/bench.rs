//! `/api/v1/bench/net`: run a test, list and show results, the server.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use serde::Deserialize;

use super::AppState;
use super::error::ApiError;
use crate::bench::net::{ClientOptions, NetRun, ServerStatus};

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
