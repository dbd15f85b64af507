//! `/api/v1/shares` and `/api/v1/users`.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::error::ApiError;
use crate::shares::{Applied, SambaUser, ShareError, ShareList, ShareRequest};

/// Share and user changes run as their own task, so that a client that
/// goes away cannot stop one between writing smb.conf and restoring it.
async fn detached<T: Send + 'static>(
    work: impl Future<Output = Result<T, ShareError>> + Send + 'static,
) -> Result<T, ApiError> {
    Ok(tokio::spawn(work)
        .await
        .map_err(|e| ApiError::internal(&e))??)
}

pub async fn list(State(state): State<AppState>) -> Result<Json<ShareList>, ApiError> {
    Ok(Json(state.shares.list().await?))
}

pub async fn add(
    State(state): State<AppState>,
    body: Result<Json<ShareRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<Applied>), ApiError> {
    let Json(req) = body?;
    let shares = state.shares.clone();
    let applied = detached(async move { shares.add(req).await }).await?;
    Ok((StatusCode::CREATED, Json(applied)))
}

pub async fn update(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<ShareRequest>, JsonRejection>,
) -> Result<Json<Applied>, ApiError> {
    let Json(req) = body?;
    let shares = state.shares.clone();
    Ok(Json(
        detached(async move { shares.update(&name, req).await }).await?,
    ))
}

pub async fn remove(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Applied>, ApiError> {
    let shares = state.shares.clone();
    Ok(Json(
        detached(async move { shares.remove(&name).await }).await?,
    ))
}

pub async fn users(State(state): State<AppState>) -> Result<Json<Vec<SambaUser>>, ApiError> {
    Ok(Json(state.shares.users().await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

pub async fn add_user(
    State(state): State<AppState>,
    body: Result<Json<NewUser>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let Json(req) = body?;
    let shares = state.shares.clone();
    detached(async move { shares.add_user(&req.username, &req.password).await }).await?;
    Ok(StatusCode::CREATED)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserChange {
    password: Option<String>,
    enabled: Option<bool>,
}

pub async fn update_user(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Result<Json<UserChange>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let Json(req) = body?;
    let shares = state.shares.clone();
    detached(async move {
        if let Some(password) = &req.password {
            shares.set_password(&name, password).await?;
        }
        if let Some(enabled) = req.enabled {
            shares.set_enabled(&name, enabled).await?;
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn remove_user(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let shares = state.shares.clone();
    detached(async move { shares.remove_user(&name).await }).await?;
    Ok(StatusCode::NO_CONTENT)
}
