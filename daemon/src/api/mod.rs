//! The HTTP API under `/api/v1` and the web UI's assets. Handlers are thin:
//! read the request, call the domain, map errors once (see [`error`]).

mod assets;
mod bench;
mod disks;
pub mod error;
mod metrics;
mod schedules;
mod session;
mod shares;
mod system;
mod tuning;

use std::future::Future;
use std::sync::Arc;

use axum::extract::State;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{any, get, post, put};
use axum::{Json, Router};
use serde::Serialize;

use crate::auth::Auth;
use crate::bench::disk::DiskBench;
use crate::bench::net::NetBench;
use crate::disks::Disks;
use crate::host::Host;
use crate::inventory::{self, SystemInfo};
use crate::monitor::Monitor;
use crate::schedule::Scheduler;
use crate::schedule::notify::Notifier;
use crate::shares::Shares;
use crate::tuning::Tuner;
use error::ApiError;

pub use session::COOKIE_NAME;

#[derive(Clone)]
pub struct AppState {
    pub auth: Arc<Auth>,
    pub disks: Arc<Disks>,
    pub tuner: Arc<Tuner>,
    pub shares: Arc<Shares>,
    pub net: Arc<NetBench>,
    pub disk_bench: Arc<DiskBench>,
    pub scheduler: Arc<Scheduler>,
    pub notifier: Arc<Notifier>,
    pub monitor: Arc<Monitor>,
    pub host: Host,
}

#[derive(Serialize)]
struct Health {
    status: &'static str,
    version: &'static str,
    setup_required: bool,
}

async fn health(State(state): State<AppState>) -> Result<Json<Health>, ApiError> {
    Ok(Json(Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
        setup_required: state.auth.setup_required()?,
    }))
}

async fn system(State(state): State<AppState>) -> Result<Json<SystemInfo>, ApiError> {
    let host = state.host.clone();
    // sysfs reads are quick but blocking; keep them off the async threads.
    let info = tokio::task::spawn_blocking(move || inventory::collect(&host))
        .await
        .map_err(|err| ApiError::internal(&err))??;
    Ok(Json(info))
}

async fn unknown_api() -> ApiError {
    ApiError::new(axum::http::StatusCode::NOT_FOUND, "no such API route")
}

pub fn router(state: AppState) -> Router {
    let public = Router::new()
        .route("/api/v1/health", get(health))
        .route("/api/v1/setup", post(session::setup))
        .route("/api/v1/login", post(session::login))
        .route("/metrics", get(metrics::prometheus));
    // Unknown API paths sit behind the session check too, so that an
    // anonymous caller cannot map which routes exist.
    let private = Router::new()
        .route("/api/v1/system", get(system))
        .route("/api/v1/session", get(session::whoami))
        .route("/api/v1/logout", post(session::logout))
        .route("/api/v1/password", post(session::change_password))
        .route("/api/v1/disks", get(disks::list))
        .route("/api/v1/disks/{name}", get(disks::show))
        .route("/api/v1/disks/{name}/smart", get(disks::smart))
        .route("/api/v1/disks/{name}/format", post(disks::format))
        .route(
            "/api/v1/disks/{name}/mount/preview",
            post(disks::mount_preview),
        )
        .route("/api/v1/disks/{name}/mount", post(disks::mount))
        .route("/api/v1/disks/{name}/unmount", post(disks::unmount))
        .route("/api/v1/disks/{name}/power", put(disks::power))
        .route("/api/v1/tuning", get(tuning::show).put(tuning::apply))
        .route("/api/v1/tuning/events", get(tuning::events))
        .route("/api/v1/shares", get(shares::list).post(shares::add))
        .route(
            "/api/v1/shares/{name}",
            put(shares::update).delete(shares::remove),
        )
        .route("/api/v1/users", get(shares::users).post(shares::add_user))
        .route(
            "/api/v1/users/{name}",
            put(shares::update_user).delete(shares::remove_user),
        )
        .route(
            "/api/v1/bench/net",
            get(bench::net_runs).post(bench::net_run),
        )
        .route(
            "/api/v1/bench/net/server",
            get(bench::net_server).put(bench::set_net_server),
        )
        .route("/api/v1/bench/net/{id}", get(bench::net_run_by_id))
        .route("/api/v1/bench/disk", post(bench::disk_run))
        .route("/api/v1/bench/runs", get(bench::disk_runs))
        .route("/api/v1/bench/runs/{id}", get(bench::disk_run_by_id))
        .route(
            "/api/v1/bench/runs/{id}/cancel",
            post(bench::cancel_disk_run),
        )
        .route("/api/v1/bench/compare", get(bench::compare_disk_runs))
        .route(
            "/api/v1/schedules",
            get(schedules::list).post(schedules::add),
        )
        .route("/api/v1/schedules/preview", get(schedules::preview))
        .route(
            "/api/v1/schedules/{id}",
            get(schedules::show)
                .put(schedules::update)
                .delete(schedules::remove),
        )
        .route("/api/v1/schedules/{id}/run", post(schedules::run))
        .route("/api/v1/jobs", get(schedules::jobs))
        .route("/api/v1/jobs/{id}", get(schedules::job))
        .route("/api/v1/jobs/{id}/cancel", post(schedules::cancel_job))
        .route(
            "/api/v1/notifications",
            get(schedules::notifications).put(schedules::set_notifications),
        )
        .route(
            "/api/v1/notifications/test",
            post(schedules::test_notifications),
        )
        .route("/api/v1/system/clock", get(system::clock))
        .route("/api/v1/system/hostname", put(system::set_hostname))
        .route("/api/v1/system/log", get(system::log))
        .route("/api/v1/system/power", post(system::power))
        .route("/api/v1/sessions", get(system::sessions))
        .route(
            "/api/v1/sessions/{id}",
            axum::routing::delete(system::end_session),
        )
        .route("/api/v1/metrics/series", get(metrics::series))
        .route("/api/v1/metrics/query", get(metrics::query))
        .route("/api/v1/metrics/self", get(metrics::own_writes))
        .route("/api/v1/metrics/card-writes", get(metrics::card_writes))
        .route(
            "/api/v1/metrics/token",
            post(metrics::new_token).delete(metrics::revoke_token),
        )
        .route("/api/v1/events", get(metrics::events))
        .route("/api/v1/{*rest}", any(unknown_api))
        .route_layer(from_fn_with_state(state.clone(), session::require_session));
    Router::new()
        .merge(public)
        .merge(private)
        .fallback(assets::serve)
        .layer(from_fn(session::same_origin))
        .layer(from_fn(session::security_headers))
        .with_state(state)
}

/// Serves until `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The client address feeds the login throttle.
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}
