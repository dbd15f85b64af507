//! The one place where domain errors become HTTP statuses. Bodies are
//! `{"error": "...", "field": "..."}`; `field` is present when one input
//! field is to blame.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::auth::AuthError;
use crate::bench::disk::DiskBenchError;
use crate::bench::net::NetError;
use crate::disks::DiskError;
use crate::host::HostError;
use crate::host::runner::RunError;
use crate::monitor::MonitorError;
use crate::schedule::ScheduleError;
use crate::schedule::notify::NotifyError;
use crate::shares::ShareError;
use crate::system::SystemError;
use crate::tuning::TuningError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub field: Option<String>,
    /// Sent as `Retry-After` with 429 and 503.
    pub retry_after_secs: Option<u64>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            field: None,
            retry_after_secs: None,
        }
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// A fault of ours or of the machine: logged in full, reported briefly,
    /// so file paths and SQL do not leak to the browser.
    pub fn internal(err: &dyn std::error::Error) -> Self {
        tracing::error!("internal error: {err}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error; see the nasd log",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body {
            error: &self.message,
            field: self.field.as_deref(),
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after_secs {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl From<AuthError> for ApiError {
    fn from(err: AuthError) -> Self {
        let status = match &err {
            AuthError::Invalid(invalid) => {
                return Self::new(StatusCode::BAD_REQUEST, invalid.to_string())
                    .with_field(&invalid.field);
            }
            AuthError::WrongSetupToken => {
                return Self::new(StatusCode::FORBIDDEN, err.to_string()).with_field("token");
            }
            AuthError::WrongCurrentPassword => {
                return Self::new(StatusCode::FORBIDDEN, err.to_string())
                    .with_field("current_password");
            }
            AuthError::TooManyAttempts { retry_after_secs } => {
                let mut api = Self::new(StatusCode::TOO_MANY_REQUESTS, err.to_string());
                api.retry_after_secs = Some(*retry_after_secs);
                return api;
            }
            AuthError::AlreadySetUp => StatusCode::CONFLICT,
            AuthError::BadCredentials | AuthError::NoSession => StatusCode::UNAUTHORIZED,
            AuthError::TokenFile { .. } | AuthError::Hashing(_) | AuthError::Store(_) => {
                return Self::internal(&err);
            }
        };
        Self::new(status, err.to_string())
    }
}

impl From<DiskError> for ApiError {
    fn from(err: DiskError) -> Self {
        let status = match &err {
            DiskError::Invalid(invalid) => {
                return Self::new(StatusCode::BAD_REQUEST, invalid.to_string())
                    .with_field(&invalid.field);
            }
            DiskError::NeedsConfirmation { .. } => {
                return Self::new(StatusCode::CONFLICT, err.to_string()).with_field("confirm");
            }
            DiskError::NotFound(_) => StatusCode::NOT_FOUND,
            DiskError::System(_) => StatusCode::FORBIDDEN,
            DiskError::Mounted { .. }
            | DiskError::InUse { .. }
            | DiskError::NoFilesystem(_)
            | DiskError::Busy { .. } => StatusCode::CONFLICT,
            DiskError::NotSupported(_) => StatusCode::UNPROCESSABLE_ENTITY,
            DiskError::Run(RunError::NotInstalled { .. }) => StatusCode::NOT_IMPLEMENTED,
            DiskError::Run(RunError::Timeout { .. }) => StatusCode::GATEWAY_TIMEOUT,
            // A tool's own words (mount, mkfs) tell the user what went wrong.
            DiskError::Run(_) | DiskError::Verify(_) => StatusCode::INTERNAL_SERVER_ERROR,
            DiskError::Host(_) | DiskError::Store(_) => return Self::internal(&err),
        };
        Self::new(status, err.to_string())
    }
}

impl From<TuningError> for ApiError {
    fn from(err: TuningError) -> Self {
        let status = match &err {
            TuningError::Invalid(invalid) => {
                return Self::new(StatusCode::BAD_REQUEST, invalid.to_string())
                    .with_field(&invalid.field);
            }
            TuningError::ThermalRisk(_) => {
                return Self::new(StatusCode::CONFLICT, err.to_string())
                    .with_field("accept_thermal_risk");
            }
            TuningError::NoCpufreq => StatusCode::UNPROCESSABLE_ENTITY,
            TuningError::Restored { .. } | TuningError::NotRestored { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            TuningError::Host(_) | TuningError::Store(_) => return Self::internal(&err),
        };
        Self::new(status, err.to_string())
    }
}

impl From<ShareError> for ApiError {
    fn from(err: ShareError) -> Self {
        let status = match &err {
            ShareError::Invalid(invalid) => {
                return Self::new(StatusCode::BAD_REQUEST, invalid.to_string())
                    .with_field(&invalid.field);
            }
            ShareError::NotFound(_) => StatusCode::NOT_FOUND,
            ShareError::Exists(_) | ShareError::InUse(_) => StatusCode::CONFLICT,
            ShareError::Rejected { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ShareError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ShareError::Run(RunError::NotInstalled { .. }) => StatusCode::NOT_IMPLEMENTED,
            ShareError::Restored(_) | ShareError::Run(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ShareError::Host(_) | ShareError::Store(_) => return Self::internal(&err),
        };
        Self::new(status, err.to_string())
    }
}

impl From<NetError> for ApiError {
    fn from(err: NetError) -> Self {
        let status = match &err {
            NetError::Invalid(invalid) => {
                return Self::new(StatusCode::BAD_REQUEST, invalid.to_string())
                    .with_field(&invalid.field);
            }
            NetError::NotFound(_) => StatusCode::NOT_FOUND,
            NetError::Busy => StatusCode::CONFLICT,
            NetError::Bind { .. } => StatusCode::CONFLICT,
            // The peer's fault or the network's: a gateway-style failure.
            NetError::Refused { .. } | NetError::Protocol(_) => StatusCode::BAD_GATEWAY,
            NetError::Store(_) => return Self::internal(&err),
        };
        Self::new(status, err.to_string())
    }
}

impl From<DiskBenchError> for ApiError {
    fn from(err: DiskBenchError) -> Self {
        let err = match err {
            DiskBenchError::Disks(disk) => return Self::from(disk),
            other => other,
        };
        let status = match &err {
            DiskBenchError::Invalid(invalid) => {
                return Self::new(StatusCode::BAD_REQUEST, invalid.to_string())
                    .with_field(&invalid.field);
            }
            DiskBenchError::Busy(invalid) => {
                return Self::new(StatusCode::CONFLICT, invalid.to_string())
                    .with_field(&invalid.field);
            }
            DiskBenchError::NotFound(_) => StatusCode::NOT_FOUND,
            DiskBenchError::Disks(_)
            | DiskBenchError::Engine(_)
            | DiskBenchError::Store(_)
            | DiskBenchError::Corrupt { .. } => {
                return Self::internal(&err);
            }
        };
        Self::new(status, err.to_string())
    }
}

impl From<ScheduleError> for ApiError {
    fn from(err: ScheduleError) -> Self {
        let status = match &err {
            ScheduleError::Invalid(invalid) => {
                return Self::new(StatusCode::BAD_REQUEST, invalid.to_string())
                    .with_field(&invalid.field);
            }
            ScheduleError::NotFound(_) | ScheduleError::JobNotFound(_) => StatusCode::NOT_FOUND,
            ScheduleError::NotRunning(_) => StatusCode::CONFLICT,
            ScheduleError::Store(_) | ScheduleError::Corrupt { .. } => return Self::internal(&err),
        };
        Self::new(status, err.to_string())
    }
}

impl From<NotifyError> for ApiError {
    fn from(err: NotifyError) -> Self {
        match &err {
            NotifyError::Invalid(invalid) => {
                Self::new(StatusCode::BAD_REQUEST, invalid.to_string()).with_field(&invalid.field)
            }
            NotifyError::Store(_) | NotifyError::Corrupt(_) => Self::internal(&err),
        }
    }
}

impl From<SystemError> for ApiError {
    fn from(err: SystemError) -> Self {
        let status = match &err {
            SystemError::Invalid(invalid) => {
                return Self::new(StatusCode::BAD_REQUEST, invalid.to_string())
                    .with_field(&invalid.field);
            }
            SystemError::NotLive(_) => StatusCode::CONFLICT,
            SystemError::Run(RunError::NotInstalled { .. }) => StatusCode::NOT_IMPLEMENTED,
            SystemError::Host(_) | SystemError::Run(_) => return Self::internal(&err),
        };
        Self::new(status, err.to_string())
    }
}

impl From<MonitorError> for ApiError {
    fn from(err: MonitorError) -> Self {
        match &err {
            MonitorError::Invalid(invalid) => {
                Self::new(StatusCode::BAD_REQUEST, invalid.to_string()).with_field(&invalid.field)
            }
            MonitorError::NoSeries(_) => {
                Self::new(StatusCode::NOT_FOUND, err.to_string()).with_field("series")
            }
            MonitorError::Store(_) => Self::internal(&err),
        }
    }
}

impl From<HostError> for ApiError {
    fn from(err: HostError) -> Self {
        Self::internal(&err)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let status = match rejection {
            JsonRejection::MissingJsonContentType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            _ => StatusCode::BAD_REQUEST,
        };
        Self::new(status, format!("request body: {}", rejection.body_text()))
    }
}
