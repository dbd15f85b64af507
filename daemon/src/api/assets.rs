//! The web UI, embedded in the binary so the board needs no files beside it.
//! The pages are public; everything they show comes from the API, which is
//! not.

use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use rust_embed::Embed;

#[derive(Embed)]
#[folder = "../webui/static/"]
struct WebUi;

pub async fn serve(uri: Uri) -> Response {
    let path = match uri.path().trim_start_matches('/') {
        "" => "index.html",
        other => other,
    };
    let Some(file) = WebUi::get(path) else {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    };
    let mime = HeaderValue::from_str(file.metadata.mimetype())
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    (
        [
            (header::CONTENT_TYPE, mime),
            // Small files, and a firmware update must show its new UI at once.
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        file.data,
    )
        .into_response()
}
