//! `/api/v1/tuning`: the state, a change (preset or values), the events.

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use serde_json::{Value, json};

use super::AppState;
use super::error::ApiError;
use crate::tuning::{Event, TuningRequest, TuningState};

pub async fn show(State(state): State<AppState>) -> Result<Json<TuningState>, ApiError> {
    let tuner = state.tuner.clone();
    let tuning = tokio::task::spawn_blocking(move || tuner.state())
        .await
        .map_err(|e| ApiError::internal(&e))??;
    Ok(Json(tuning))
}

pub async fn apply(
    State(state): State<AppState>,
    body: Result<Json<TuningRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(req) = body?;
    let changes = state.tuner.apply(req).await?;
    Ok(Json(
        json!({ "changed": !changes.is_empty(), "changes": changes }),
    ))
}

pub async fn events(State(state): State<AppState>) -> Result<Json<Vec<Event>>, ApiError> {
    Ok(Json(state.tuner.events()?))
}
