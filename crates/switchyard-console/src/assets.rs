//! The page and its scripts and styles, compiled into the binary from `assets/` (no
//! network at run time, nothing to install beside the binary). Each is served with its
//! content type and an ETag: browsers revalidate (`no-cache`) and get a 304 while the
//! binary is the same, so a new version is never hidden behind a stale cache.

use crate::access::Access;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// One embedded file.
struct Asset {
    name: &'static str,
    kind: &'static str,
    body: &'static str,
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        kind: "text/html; charset=utf-8",
        body: include_str!("../assets/index.html"),
    },
    Asset {
        name: "console.css",
        kind: "text/css; charset=utf-8",
        body: include_str!("../assets/console.css"),
    },
    Asset {
        name: "app.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../assets/app.js"),
    },
    Asset {
        name: "api.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../assets/api.js"),
    },
    Asset {
        name: "dom.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../assets/dom.js"),
    },
    Asset {
        name: "calls.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../assets/calls.js"),
    },
    Asset {
        name: "call.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../assets/call.js"),
    },
    Asset {
        name: "conversations.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../assets/conversations.js"),
    },
    Asset {
        name: "spend.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../assets/spend.js"),
    },
    Asset {
        name: "plot.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../assets/plot.js"),
    },
    Asset {
        name: "budgets.js",
        kind: "text/javascript; charset=utf-8",
        body: include_str!("../assets/budgets.js"),
    },
];

/// FNV-1a of the file and the crate's version: stable for one build's bytes.
fn etag(body: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in body.bytes().chain(env!("CARGO_PKG_VERSION").bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{h:016x}\"")
}

fn serve(asset: &Asset, headers: &HeaderMap) -> Response {
    let tag = etag(asset.body);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut r = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        asset.body.into_response()
    };
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.kind));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, v);
    }
    r
}

/// The refusal to answer instead of the page, if any.
fn page_refused(access: &Access, headers: &HeaderMap) -> Option<Response> {
    access.page(headers).err().map(crate::api::refused)
}

/// `GET /console` and `/console/`: the page.
pub(crate) async fn index(
    State(console): State<Arc<crate::Console>>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = page_refused(&console.access, &headers) {
        return r;
    }
    serve(&ASSETS[0], &headers)
}

/// `GET /console/assets/{name}`.
pub(crate) async fn asset(
    State(console): State<Arc<crate::Console>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = page_refused(&console.access, &headers) {
        return r;
    }
    match ASSETS.iter().find(|a| a.name == name) {
        Some(a) => serve(a, &headers),
        None => crate::api::error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no console asset `{name}`"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_the_page_names_is_embedded() {
        let page = ASSETS[0].body;
        for a in &ASSETS[1..] {
            if a.name.ends_with(".css") || a.name == "app.js" {
                assert!(page.contains(&format!("assets/{}", a.name)), "{}", a.name);
            }
        }
        // Module imports name files that exist.
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            for line in a.body.lines().filter(|l| l.starts_with("import ")) {
                let file = line
                    .rsplit("./")
                    .next()
                    .unwrap_or("")
                    .trim_end_matches(['\'', ';', '"']);
                assert!(ASSETS.iter().any(|x| x.name == file), "{}: {line}", a.name);
            }
        }
    }
}
