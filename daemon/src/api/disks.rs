//! `/api/v1/disks`: list, details, SMART, format, mount (with a preview),
//! unmount, power.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use super::AppState;
use super::error::ApiError;
use crate::disks::power::PowerSettings;
use crate::disks::{DiskError, DiskList, FormatRequest, MountOutcome, MountRequest, Volume};

/// Runs a change to disks as its own task: if the client goes away, the
/// request is dropped but mkfs or mount finish (killing them midway is the
/// worst outcome), and the result is logged.
async fn detached<T: Send + 'static>(
    work: impl Future<Output = Result<T, DiskError>> + Send + 'static,
) -> Result<T, ApiError> {
    Ok(tokio::spawn(work)
        .await
        .map_err(|e| ApiError::internal(&e))??)
}

pub async fn list(State(state): State<AppState>) -> Result<Json<DiskList>, ApiError> {
    Ok(Json(state.disks.list().await?))
}

/// One disk, or one partition, by kernel name.
pub async fn show(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let list = state.disks.list().await?;
    for disk in &list.disks {
        if disk.volume.name == name {
            return Ok(Json(
                serde_json::to_value(disk).map_err(|e| ApiError::internal(&e))?,
            ));
        }
        if let Some(p) = disk.partitions.iter().find(|p| p.volume.name == name) {
            return Ok(Json(
                serde_json::to_value(p).map_err(|e| ApiError::internal(&e))?,
            ));
        }
    }
    Err(DiskError::NotFound(name).into())
}

pub async fn smart(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let report = state.disks.smart(&name).await?;
    Ok(Json(
        serde_json::to_value(report).map_err(|e| ApiError::internal(&e))?,
    ))
}

pub async fn format(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<FormatRequest>, JsonRejection>,
) -> Result<Json<Volume>, ApiError> {
    let Json(req) = body?;
    let disks = state.disks.clone();
    Ok(Json(
        detached(async move { disks.format(&name, &req).await }).await?,
    ))
}

pub async fn mount_preview(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<MountRequest>, JsonRejection>,
) -> Result<Json<MountOutcome>, ApiError> {
    let Json(req) = body?;
    Ok(Json(state.disks.mount_preview(&name, &req).await?))
}

pub async fn mount(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<MountRequest>, JsonRejection>,
) -> Result<Json<MountOutcome>, ApiError> {
    let Json(req) = body?;
    let disks = state.disks.clone();
    Ok(Json(
        detached(async move { disks.mount(&name, &req).await }).await?,
    ))
}

#[derive(Deserialize, Default)]
pub struct UnmountRequest {
    #[serde(default)]
    force: bool,
}

pub async fn unmount(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<UnmountRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(req) = body?;
    let disks = state.disks.clone();
    let changed = detached(async move { disks.unmount(&name, req.force).await }).await?;
    Ok(Json(serde_json::json!({ "changed": changed })))
}

pub async fn power(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<PowerSettings>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let Json(settings) = body?;
    let disks = state.disks.clone();
    detached(async move { disks.set_power(&name, &settings).await }).await?;
    Ok(StatusCode::NO_CONTENT)
}
