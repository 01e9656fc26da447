//! A stub upstream on 127.0.0.1:0 that answers every request with one file's bytes,
//! byte for byte, as `application/json` (a `.json` file) or `text/event-stream` (`.sse`):
//! a provider transcript the codecs did not produce, for the gateway to translate.

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::response::Response;
use axum::Router;
use bytes::Bytes;

/// Serves `file`'s bytes; returns the stub's origin (`http://127.0.0.1:PORT`).
pub(crate) async fn serve_file(file: &std::path::Path) -> String {
    let bytes = Bytes::from(std::fs::read(file).unwrap_or_else(|e| panic!("{file:?}: {e}")));
    let content_type = match file.extension().and_then(|e| e.to_str()) {
        Some("sse") => "text/event-stream",
        _ => "application/json",
    };
    let app = Router::new().fallback(move || {
        let bytes = bytes.clone();
        async move {
            Response::builder()
                .header(CONTENT_TYPE, content_type)
                .body(Body::from(bytes))
                .unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}
