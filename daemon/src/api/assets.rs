//! The web UI, embedded in the binary so the board needs no files beside it.
//! The pages are public; everything they show comes from the API, which is
//! not. Each file is sent gzipped (compressed at build time) to browsers
//! that accept it; hashed assets are cached for a year, index.html never,
//! so a firmware update shows its new UI at once.

use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use rust_embed::Embed;

/// `webui/dist`, or a placeholder page in a debug build without it (see
/// build.rs).
#[derive(Embed)]
#[folder = "$NASD_WEBUI_DIR"]
struct WebUi;

fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| p.trim().replace(' ', "") == "q=0");
            name.eq_ignore_ascii_case("gzip") && !refused
        })
}

pub async fn serve(uri: Uri, headers: HeaderMap) -> Response {
    let path = match uri.path().trim_start_matches('/') {
        "" => "index.html",
        other => other,
    };
    let Some(file) = WebUi::get(path) else {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    };
    let mime = HeaderValue::from_str(file.metadata.mimetype())
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    let cache = if path.starts_with("assets/") {
        // The name carries a hash of the content.
        HeaderValue::from_static("public, max-age=31536000, immutable")
    } else {
        HeaderValue::from_static("no-cache")
    };
    let mut response_headers = HeaderMap::new();
    response_headers.insert(header::CONTENT_TYPE, mime);
    response_headers.insert(header::CACHE_CONTROL, cache);
    response_headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    let gzipped = accepts_gzip(&headers)
        .then(|| WebUi::get(&format!("{path}.gz")))
        .flatten();
    let body = match gzipped {
        Some(gz) => {
            response_headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            gz.data
        }
        None => file.data,
    };
    (response_headers, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_sent_only_where_accepted() {
        let with = |value: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
            accepts_gzip(&h)
        };
        assert!(with("gzip, deflate, br"));
        assert!(with("br;q=1.0, GZIP;q=0.5"));
        assert!(!with("br"));
        assert!(!with("gzip;q=0"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
