//! Shared by the console's tests: a generated store served by the console on a free
//! loopback port, and a client for it.

#![allow(dead_code)]

pub(crate) mod generate;

use std::path::Path;
use std::sync::Arc;
use switchyard_console::SqliteSource;

/// The console over `dir` on 127.0.0.1, as `switchyard log view` serves it; its base URL.
pub(crate) async fn serve(dir: &Path) -> String {
    let source = SqliteSource::open(dir).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(switchyard_console::serve_alone(
        listener,
        Arc::new(source),
        std::future::pending(),
    ));
    url
}

/// GET `path`: status and JSON body (`null` when the body is not JSON).
pub(crate) async fn get(base: &str, path: &str) -> (u16, serde_json::Value) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
    )
}
