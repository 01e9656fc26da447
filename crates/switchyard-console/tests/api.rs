//! The console's JSON API over HTTP, against a generated store of 300 calls: paging,
//! every filter and sort, one call and its raw bytes, spend, budgets, the summary, the
//! replay diff of a `ReplayExhausted` failure, and the refusals (bad parameters, foreign
//! `Host`s and origins).

mod common;

use common::generate::{self, call};
use common::{get, serve};
use serde_json::{json, Value};

const N: u64 = 300;

fn numbers(page: &Value) -> Vec<u64> {
    page["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["number"].as_u64().unwrap())
        .collect()
}

async fn store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    generate::generate(dir.path(), N);
    std::fs::write(
        dir.path().join("run.yaml"),
        "format: 2\nsettings:\n  budget: {max_usd: 2, max_calls: 1000, exclude_roles: [reviewer]}\n",
    )
    .unwrap();
    let url = serve(dir.path()).await;
    (dir, url)
}

#[tokio::test]
async fn pages_come_newest_first_and_never_overlap() {
    let (_dir, url) = store().await;
    let (s, first) = get(&url, "/console/api/calls").await;
    assert_eq!(s, 200, "{first}");
    assert_eq!(first["total"], N);
    assert_eq!(numbers(&first), (251..=300).rev().collect::<Vec<_>>());
    let (_, last) = get(&url, "/console/api/calls?offset=280&limit=50").await;
    assert_eq!(numbers(&last), (1..=20).rev().collect::<Vec<_>>());
    let (_, oldest) = get(&url, "/console/api/calls?order=asc&limit=3").await;
    assert_eq!(numbers(&oldest), [1, 2, 3]);
    let row = &first["calls"][0];
    let c = call(300, N);
    assert_eq!(row["reference"], c.reference);
    assert_eq!(row["key"], c.key);
    assert_eq!(row["time"], c.time);
    assert_eq!(row["attempts"], c.attempts);
}

#[tokio::test]
async fn every_filter_narrows_the_calls() {
    let (_dir, url) = store().await;
    let count = |f: &dyn Fn(&generate::Call) -> bool| (1..=N).filter(|&i| f(&call(i, N))).count();
    let errors = count(&|c| c.kind.is_some());
    let (_, p) = get(&url, "/console/api/calls?status=error&limit=500").await;
    assert_eq!(p["total"], errors as u64);
    assert!(p["calls"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["status"] == "error"));
    let (_, p) = get(&url, "/console/api/calls?status=ok").await;
    assert_eq!(p["total"], (N as usize - errors) as u64);
    let (_, p) = get(&url, "/console/api/calls?kind=Timeout").await;
    assert_eq!(p["total"], count(&|c| c.kind == Some("Timeout")) as u64);
    let (_, p) = get(&url, "/console/api/calls?key=bob&reference=mock/echo").await;
    assert_eq!(
        p["total"],
        count(&|c| c.key == "bob" && c.reference == "mock/echo") as u64
    );
    let (_, p) = get(&url, "/console/api/calls?role=(none)").await;
    assert_eq!(p["total"], count(&|c| c.role.is_empty()) as u64);
    let (_, p) = get(&url, "/console/api/calls?role=coder&model=qwen3-32b").await;
    assert_eq!(
        p["total"],
        count(&|c| c.role == "coder" && c.reference == "vllm/qwen3-32b") as u64
    );
    let (_, p) = get(&url, "/console/api/calls?q=gemini").await;
    assert_eq!(
        p["total"],
        count(&|c| c.reference.contains("gemini")) as u64
    );
    // A time range: calls 101 to 200 by their start.
    let (since, until) = (call(101, N).time, call(201, N).time);
    let (_, p) = get(
        &url,
        &format!("/console/api/calls?since={since}&until={until}"),
    )
    .await;
    assert_eq!(p["total"], 100, "{p}");
    // A blank field filters nothing.
    let (_, p) = get(&url, "/console/api/calls?status=&kind=&q=").await;
    assert_eq!(p["total"], N);
}

#[tokio::test]
async fn sorts_put_unknown_costs_last_either_way() {
    let (_dir, url) = store().await;
    for order in ["desc", "asc"] {
        let (_, p) = get(
            &url,
            &format!("/console/api/calls?sort=cost&order={order}&limit=500"),
        )
        .await;
        let costs: Vec<Option<f64>> = p["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cost_usd"].as_f64())
            .collect();
        assert_eq!(costs.len(), N as usize);
        let known: Vec<f64> = costs.iter().map_while(|c| *c).collect();
        assert!(
            costs[known.len()..].iter().all(Option::is_none),
            "unknown costs last ({order})"
        );
        let mut sorted = known.clone();
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if order == "desc" {
            sorted.reverse();
        }
        assert_eq!(known, sorted, "{order}");
        // Unknown is never shown as 0.
        assert!(p["calls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["cost_usd"].is_null()));
    }
    let (_, p) = get(&url, "/console/api/calls?sort=latency&limit=500").await;
    let l: Vec<f64> = p["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["latency_ms"].as_f64().unwrap())
        .collect();
    assert!(l.windows(2).all(|w| w[0] >= w[1]));
    let (_, p) = get(&url, "/console/api/calls?sort=tokens&order=asc&limit=500").await;
    let t: Vec<i64> = p["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["input_tokens"].as_i64().unwrap_or(0) + c["output_tokens"].as_i64().unwrap_or(0))
        .collect();
    assert!(t.windows(2).all(|w| w[0] <= w[1]));
}

#[tokio::test]
async fn bad_parameters_are_refused_by_name() {
    let (_dir, url) = store().await;
    for (q, parameter, says) in [
        ("/console/api/calls?limit=1000", "limit", "from 1 to 500"),
        (
            "/console/api/calls?sort=price",
            "sort",
            "time, cost, latency, tokens",
        ),
        ("/console/api/calls?status=maybe", "status", "ok or error"),
        ("/console/api/calls?since=last-week", "since", "RFC 3339"),
        ("/console/api/calls?colour=red", "colour", "accepted:"),
        ("/console/api/spend?by=colour", "by", "model, key, role"),
        ("/console/api/spend?bucket=minute", "bucket", "hour, day"),
        ("/console/api/summary?x=1", "x", "takes none"),
    ] {
        let (s, body) = get(&url, q).await;
        assert_eq!(s, 400, "{q}: {body}");
        assert_eq!(body["error"]["parameter"], parameter, "{q}");
        let m = body["error"]["message"].as_str().unwrap();
        assert!(m.contains(says), "{q}: {m}");
    }
    let (s, body) = get(&url, "/console/api/calls/99999").await;
    assert_eq!(s, 404);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no call `99999`"));
    let (s, _) = get(&url, "/console/api/calls/abc").await;
    assert_eq!(s, 404);
    let (s, body) = get(&url, "/console/api/nothing").await;
    assert_eq!(s, 404);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/console/api/calls"));
}

#[tokio::test]
async fn one_call_in_full_with_its_raw_bytes_and_the_request_to_send_again() {
    let (_dir, url) = store().await;
    let (s, d) = get(&url, "/console/api/calls/19").await;
    assert_eq!(s, 200, "{d}");
    let c = call(19, N);
    assert_eq!(d["record"]["number"], 19);
    assert_eq!(d["record"]["reference"], c.reference);
    assert_eq!(
        d["record"]["attempts"].as_array().unwrap().len(),
        c.attempts as usize
    );
    assert_eq!(d["replay"]["available"], true);
    let body: Value = serde_json::from_str(d["replay"]["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        body["model"], c.reference,
        "the model is the reference the gateway resolves"
    );
    assert_eq!(d["replay"]["path"], "/v1/responses");
    assert!(d["nearest"].is_null());
    let raw = reqwest::get(format!("{url}/console/api/calls/19/raw"))
        .await
        .unwrap();
    assert_eq!(raw.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(
        raw.text().await.unwrap(),
        d["record"]["raw"]["data"].as_str().unwrap()
    );
}

#[tokio::test]
async fn spend_summary_and_budgets_agree_with_the_calls() {
    let (_dir, url) = store().await;
    let calls: Vec<_> = (1..=N).map(|i| call(i, N)).collect();
    let known: f64 = calls.iter().filter_map(|c| c.cost).sum();
    let unknown = calls.iter().filter(|c| c.cost.is_none()).count() as u64;
    let (_, s) = get(&url, "/console/api/summary").await;
    assert_eq!(s["calls"], N);
    assert!((s["cost_usd"].as_f64().unwrap() - known).abs() < 1e-9);
    assert_eq!(s["unknown_cost_calls"], unknown);
    assert_eq!(
        s["keys"]["alice"],
        calls.iter().filter(|c| c.key == "alice").count() as u64
    );
    for by in ["model", "key", "role"] {
        for bucket in ["hour", "day"] {
            let (st, sp) = get(&url, &format!("/console/api/spend?by={by}&bucket={bucket}")).await;
            assert_eq!(st, 200, "{sp}");
            let points = sp["points"].as_array().unwrap();
            let usd: f64 = points.iter().map(|p| p["cost_usd"].as_f64().unwrap()).sum();
            let n: u64 = points.iter().map(|p| p["calls"].as_u64().unwrap()).sum();
            let u: u64 = points
                .iter()
                .map(|p| p["unknown_cost_calls"].as_u64().unwrap())
                .sum();
            assert!((usd - known).abs() < 1e-9, "{by}/{bucket}");
            assert_eq!((n, u), (N, unknown), "{by}/{bucket}");
            let len = points[0]["bucket"].as_str().unwrap().len();
            assert_eq!(len, if bucket == "hour" { 13 } else { 10 });
        }
    }
    let (_, b) = get(&url, "/console/api/budgets").await;
    assert_eq!(b["keys"], json!([]));
    let counted: Vec<_> = calls.iter().filter(|c| c.role != "reviewer").collect();
    assert_eq!(b["run"]["max_usd"], 2.0);
    assert_eq!(b["run"]["calls"], counted.len() as u64);
    let spent: f64 = counted.iter().filter_map(|c| c.cost).sum();
    assert!((b["run"]["spent_usd"].as_f64().unwrap() - spent).abs() < 1e-9);
    assert_eq!(b["run"]["exclude_roles"], json!(["reviewer"]));
}

#[tokio::test]
async fn a_replay_exhausted_failure_shows_the_nearest_recorded_prompt_beside_its_own() {
    let recorded = tempfile::tempdir().unwrap();
    generate::generate(recorded.path(), 3);
    let replay = tempfile::tempdir().unwrap();
    std::fs::write(
        replay.path().join("run.yaml"),
        format!("format: 2\nreplay_of: {}\n", recorded.path().display()),
    )
    .unwrap();
    generate::generate_with(replay.path(), 1, |c| {
        let mut r: Value = serde_json::from_str(&generate::line(c)).unwrap();
        r["request"] = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "Question 2 about the planner plan: what comes next?"}]},
            {"role": "user", "content": [{"type": "text", "text": "And then?"}]}]});
        r["reply"] = Value::Null;
        r["error"] = json!({"kind": "ReplayExhausted", "message": "no recorded call answers this prompt",
            "provider": null, "fields": {"role": "planner", "nearest": "call 2: message 2 added"}});
        r.to_string()
    });
    let url = serve(replay.path()).await;
    let (s, d) = get(&url, "/console/api/calls/1").await;
    assert_eq!(s, 200, "{d}");
    let n = &d["nearest"];
    assert_eq!(n["number"], 2, "{n}");
    assert_eq!(n["short"], "call 2: message 2 added");
    let rows = n["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{n}");
    assert_eq!(rows[0]["op"], "same");
    assert_eq!(
        rows[1],
        json!({"op": "added", "left": null, "right": "[user] \"And then?\""})
    );
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_with_their_types_and_policy() {
    let (_dir, url) = store().await;
    let client = reqwest::Client::new();
    for (path, kind) in [
        ("/console", "text/html; charset=utf-8"),
        ("/console/assets/app.js", "text/javascript; charset=utf-8"),
        ("/console/assets/console.css", "text/css; charset=utf-8"),
    ] {
        let r = client.get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let h = r.headers().clone();
        assert_eq!(h["content-type"], kind, "{path}");
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(h["cache-control"], "no-cache");
        let again = client
            .get(format!("{url}{path}"))
            .header("if-none-match", h["etag"].clone())
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path}");
    }
    let r = client
        .get(format!("{url}/console/api/summary"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["cache-control"], "no-store");
    let (s, _) = get(&url, "/console/assets/nothing.js").await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn only_loopback_hosts_and_origins_are_answered() {
    let (_dir, url) = store().await;
    let client = reqwest::Client::new();
    let r = client
        .get(format!("{url}/console/api/summary"))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let body: Value = r.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("DNS rebinding"));
    let r = client
        .get(format!("{url}/console/api/summary"))
        .header("origin", "https://attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = client
        .get(format!("{url}/console"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
}

#[tokio::test]
async fn a_log_without_an_index_is_indexed_elsewhere_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    generate::generate(dir.path(), 40);
    for f in ["calls.sqlite", "calls.sqlite-wal", "calls.sqlite-shm"] {
        let _ = std::fs::remove_file(dir.path().join(f));
    }
    let before: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let url = serve(dir.path()).await;
    let (s, page) = get(&url, "/console/api/calls?status=error").await;
    assert_eq!(s, 200, "{page}");
    assert_eq!(
        page["total"],
        (1..=40).filter(|&i| call(i, 40).kind.is_some()).count() as u64
    );
    let (s, d) = get(&url, "/console/api/calls/33").await;
    assert_eq!(s, 200);
    assert_eq!(d["record"]["number"], 33);
    let after: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after, "nothing written into the viewed directory");
    let empty = tempfile::tempdir().unwrap();
    let e = switchyard_console::SqliteSource::open(empty.path())
        .err()
        .unwrap();
    assert!(
        e.contains("no calls index") && e.contains("no call log"),
        "{e}"
    );
}
