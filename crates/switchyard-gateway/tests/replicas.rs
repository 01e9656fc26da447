//! Gateway replicas sharing one PostgreSQL store, against a real server: every call
//! shipped once and in full (in `answered` mode before its reply ends); one key's budget
//! held across two replicas under 1,000 concurrent calls; an rpm limit held across both;
//! a database stopped and restarted under load losing no record and writing none twice,
//! with `on_store_down: serve` serving through it and `refuse` refusing.
//!
//! The server comes from `scripts/pg start` (`scripts/test` runs it; see common/pg.rs).
//! The outage test starts a server of its own, since it stops it.

mod common;

use common::pg::{caching_replica, count, fresh_db, fresh_db_on, replica, server_url};
use common::recording::{call, key, send, ALICE, BOB};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchyard_gateway::pg::OnStoreDown;
use switchyard_gateway::{BudgetPeriod, RunningGateway, StoreDurability, StoreOptions};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};
use tokio_postgres::Client;

fn answered() -> StoreOptions {
    StoreOptions {
        durability: StoreDurability::Answered,
        ..StoreOptions::default()
    }
}

async fn healthz(gw: &RunningGateway) -> Value {
    reqwest::get(format!("{}/healthz", gw.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Waits (at most 15 s) until the replica says the database is `reachable` or not.
async fn wait_reachable(gw: &RunningGateway, reachable: bool) {
    let start = Instant::now();
    loop {
        let h = healthz(gw).await;
        if h["postgres"]["reachable"] == reachable {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the replica never saw the database {}: {h}",
            if reachable { "back" } else { "go" }
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The replica id of a data directory.
fn replica_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("replica-id"))
        .unwrap()
        .trim()
        .to_string()
}

/// The numbers `replica`'s rows hold, in order.
async fn numbers(c: &Client, replica: &str) -> Vec<i64> {
    c.query(
        "SELECT number FROM llm_calls WHERE replica = $1 ORDER BY number",
        &[&replica],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_ship_every_call_once_and_in_full() {
    let Some((c, url)) = fresh_db("replicas_records").await else {
        return;
    };
    let mock = MockServer::start().await;
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keys = || vec![key("alice", "ALICE_KEY", None)];
    let a = replica(
        &mock,
        &url,
        da.path(),
        keys(),
        answered(),
        OnStoreDown::Refuse,
    )
    .await;
    let b = replica(
        &mock,
        &url,
        db.path(),
        keys(),
        StoreOptions::default(),
        OnStoreDown::Refuse,
    )
    .await;
    let (ra, rb) = (replica_of(da.path()), replica_of(db.path()));
    assert_ne!(ra, rb, "each data directory names its own replica");
    const N: i64 = 20;
    for i in 0..N {
        let stream = i % 2 == 1;
        let (status, _, _) = call(
            &a,
            ALICE,
            Dialect::Chat,
            "mock/echo",
            &format!("a {i}"),
            stream,
        )
        .await;
        assert_eq!(status, 200);
        // `answered`: the reply ended only once its row was committed.
        assert_eq!(
            numbers(&c, &ra).await.len() as i64,
            i + 1,
            "call {i} of replica a"
        );
        let (status, _, _) = call(
            &b,
            ALICE,
            Dialect::Messages,
            "mock/echo",
            &format!("b {i}"),
            stream,
        )
        .await;
        assert_eq!(status, 200);
    }
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    let all: Vec<i64> = (1..=N).collect();
    assert_eq!(numbers(&c, &ra).await, all);
    assert_eq!(
        numbers(&c, &rb).await,
        all,
        "the fast replica shipped all by its shutdown"
    );
    // In full: each row holds the line of the replica's own log, byte for byte.
    for (dir, replica) in [(da.path(), &ra), (db.path(), &rb)] {
        let (lines, _) = switchyard::record::read_lines_from(dir, (0, 0), 1000).unwrap();
        assert_eq!(lines.len() as i64, N);
        for (n, line) in lines {
            let row = c
                .query_one(
                    "SELECT record, client_key, reference, input_tokens, cost_usd FROM llm_calls
                     WHERE replica = $1 AND number = $2",
                    &[replica, &(n as i64)],
                )
                .await
                .unwrap();
            assert_eq!(row.get::<_, Vec<u8>>(0), line, "record {n} of {replica}");
            assert_eq!(row.get::<_, Option<String>>(1).as_deref(), Some("alice"));
            assert_eq!(row.get::<_, String>(2), "mock/echo");
            assert!(row.get::<_, Option<i64>>(3).is_some_and(|t| t > 0));
            assert!(row.get::<_, Option<f64>>(4).is_some_and(|c| c > 0.0));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_budget_holds_across_two_replicas_under_a_thousand_concurrent_calls() {
    let Some((c, url)) = fresh_db("replicas_budget").await else {
        return;
    };
    let mock = MockServer::start().await;
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // Each call costs about $6e-6 (2 tokens in, 2 out) and reserves about $1e-4 (its
    // body's bytes and 10 output tokens): a budget of $0.002 lets a few hundred through.
    const BUDGET: f64 = 0.002;
    let keys = || vec![key("alice", "ALICE_KEY", Some((BUDGET, BudgetPeriod::Day)))];
    let replicas = Arc::new([
        replica(
            &mock,
            &url,
            da.path(),
            keys(),
            StoreOptions::default(),
            OnStoreDown::Refuse,
        )
        .await,
        replica(
            &mock,
            &url,
            db.path(),
            keys(),
            StoreOptions::default(),
            OnStoreDown::Refuse,
        )
        .await,
    ]);
    let tasks: Vec<_> = (0..1000)
        .map(|i| {
            let replicas = replicas.clone();
            tokio::spawn(async move {
                let request = Request::user(format!("call {i}")).with_max_tokens(10);
                let (status, _, body) = send(
                    &replicas[i % 2],
                    ALICE,
                    Dialect::Chat,
                    "mock/echo",
                    &request,
                    false,
                )
                .await;
                assert!(
                    status == 200 || status == 429,
                    "{status}: {}",
                    String::from_utf8_lossy(&body)
                );
                status == 200
            })
        })
        .collect();
    let mut admitted = 0;
    for t in tasks {
        admitted += t.await.unwrap() as i64;
    }
    let replicas = Arc::try_unwrap(replicas).ok().unwrap();
    for gw in replicas {
        gw.shutdown().await.unwrap();
    }
    assert!(
        admitted > 0 && admitted < 1000,
        "{admitted} of 1000 admitted"
    );
    let row = c
        .query_one(
            "SELECT count(*), coalesce(sum(cost_usd), 0) FROM llm_calls WHERE client_key = 'alice'",
            &[],
        )
        .await
        .unwrap();
    let (recorded, spent): (i64, f64) = (row.get(0), row.get(1));
    assert_eq!(recorded, admitted, "every admitted call recorded once");
    assert!(
        spent <= BUDGET + 1e-12,
        "spent {spent} past the budget {BUDGET}"
    );
    let ledger = c
        .query_one(
            "SELECT spent_usd, reserved_usd FROM spend_ledger WHERE key = 'alice'",
            &[],
        )
        .await
        .unwrap();
    let (settled, held): (f64, f64) = (ledger.get(0), ledger.get(1));
    assert!(
        (settled - spent).abs() < 1e-9,
        "ledger {settled} vs records {spent}"
    );
    assert!(
        held.abs() < 1e-9,
        "{held} still held after every call ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rpm_limit_holds_across_two_replicas() {
    let Some((_c, url)) = fresh_db("replicas_rpm").await else {
        return;
    };
    let mock = MockServer::start().await;
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    const RPM: u32 = 30;
    let keys = || {
        vec![switchyard_gateway::KeySpec {
            rpm: Some(RPM),
            ..key("bob", "BOB_KEY", None)
        }]
    };
    let a = replica(
        &mock,
        &url,
        da.path(),
        keys(),
        StoreOptions::default(),
        OnStoreDown::Refuse,
    )
    .await;
    let b = replica(
        &mock,
        &url,
        db.path(),
        keys(),
        StoreOptions::default(),
        OnStoreDown::Refuse,
    )
    .await;
    let minute = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            / 60
    };
    let first = minute();
    let mut passed = 0;
    let mut refused = Vec::new();
    for i in 0..100 {
        let gw = if i % 2 == 0 { &a } else { &b };
        let (status, headers, body) = call(gw, BOB, Dialect::Chat, "mock/echo", "hi", false).await;
        match status {
            200 => passed += 1,
            429 => refused.push((headers, String::from_utf8_lossy(&body).to_string())),
            other => panic!("{other}: {}", String::from_utf8_lossy(&body)),
        }
    }
    let windows = minute() - first + 1;
    // Each replica alone would let RPM through: together they let RPM through per minute.
    assert!(
        passed >= RPM as u64 && passed <= RPM as u64 * windows,
        "{passed} calls passed in {windows} minute windows at {RPM} rpm"
    );
    // Refused by the shared window (and, once a replica's own bucket is empty, by it).
    let (headers, body) = refused
        .iter()
        .find(|(_, b)| b.contains("counted across the gateway's replicas"))
        .unwrap_or_else(|| panic!("no refusal by the shared window: {refused:?}"));
    assert!(headers.contains_key("retry-after"), "{body}");
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// A throwaway server of this test's own (it is stopped and started again), removed when
/// dropped.
struct OwnServer {
    dir: PathBuf,
    url: String,
}

impl OwnServer {
    fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg")
    }

    fn start() -> OwnServer {
        let out = std::process::Command::new(Self::script())
            .arg("start")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "scripts/pg start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .unwrap_or_else(|| panic!("scripts/pg start printed no {name}: {text}"))
                .to_string()
        };
        OwnServer {
            url: value("SWITCHYARD_TEST_PG_URL"),
            dir: PathBuf::from(value("SWITCHYARD_TEST_PG_DIR")),
        }
    }

    fn run(&self, what: &str) {
        let out = std::process::Command::new(Self::script())
            .args([what, self.dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "scripts/pg {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new(Self::script())
            .arg("stop")
            .env("SWITCHYARD_TEST_PG_DIR", &self.dir)
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_lost_under_load_loses_no_record_and_writes_none_twice() {
    if server_url().is_none() {
        return;
    }
    let server = tokio::task::spawn_blocking(OwnServer::start).await.unwrap();
    let (c, url) = fresh_db_on(&server.url, "outage").await;
    drop(c);
    let mock = MockServer::start().await;
    let (ds, dr) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keys = || vec![key("alice", "ALICE_KEY", None)];
    let serving = replica(
        &mock,
        &url,
        ds.path(),
        keys(),
        answered(),
        OnStoreDown::Serve,
    )
    .await;
    let refusing = replica(
        &mock,
        &url,
        dr.path(),
        keys(),
        StoreOptions::default(),
        OnStoreDown::Refuse,
    )
    .await;
    // Calls in flight on both while the database goes and comes back.
    let load = {
        let (serving_url, _) = (serving.url(), ());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut ok = 0;
            for i in 0..150 {
                let body = serde_json::json!({
                    "model": "mock/echo",
                    "messages": [{"role": "user", "content": format!("load {i}")}],
                    "stream": i % 3 == 0,
                });
                let r = client
                    .post(format!("{serving_url}/v1/chat/completions"))
                    .bearer_auth(ALICE)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200, "serve keeps serving: call {i}");
                r.bytes().await.unwrap();
                ok += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            ok
        })
    };
    for i in 0..5 {
        let (status, _, _) = call(
            &refusing,
            ALICE,
            Dialect::Chat,
            "mock/echo",
            &format!("r {i}"),
            false,
        )
        .await;
        assert_eq!(status, 200);
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    tokio::task::block_in_place(|| server.run("halt"));
    wait_reachable(&serving, false).await;
    wait_reachable(&refusing, false).await;
    // `refuse`: nothing is served that the shared store cannot see.
    let (status, _, body) = call(
        &refusing,
        ALICE,
        Dialect::Chat,
        "mock/echo",
        "while down",
        false,
    )
    .await;
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("on_store_down: refuse"), "{body}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::task::block_in_place(|| server.run("resume"));
    wait_reachable(&serving, true).await;
    wait_reachable(&refusing, true).await;
    let (status, _, _) = call(&refusing, ALICE, Dialect::Chat, "mock/echo", "after", false).await;
    assert_eq!(status, 200, "served again once the database is back");
    let served = load.await.unwrap();
    let (rs, rr) = (replica_of(ds.path()), replica_of(dr.path()));
    serving.shutdown().await.unwrap();
    refusing.shutdown().await.unwrap();

    let c = switchyard_gateway::pg::connect(&url).await.unwrap();
    assert_eq!(numbers(&c, &rs).await, (1..=served).collect::<Vec<i64>>());
    assert_eq!(numbers(&c, &rr).await, (1..=6).collect::<Vec<i64>>());
    assert_eq!(
        count(&c, "SELECT DISTINCT replica, number FROM llm_calls").await,
        count(&c, "SELECT 1 FROM llm_calls").await,
        "no call twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_recorded_by_one_replica_answers_the_same_request_on_another() {
    use switchyard_gateway::cache::{CacheConfig, CacheMode, CacheScope};
    let Some((_c, url)) = fresh_db("replicas_cache").await else {
        return;
    };
    let mock = MockServer::start().await;
    let (da, db, dc) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let keys = || vec![key("alice", "ALICE_KEY", None)];
    let cache = |scope| CacheConfig {
        mode: CacheMode::ReadWrite,
        scope: Some(scope),
        ..CacheConfig::default()
    };
    let start = |dir: PathBuf, scope| {
        let (mock, url) = (&mock, url.clone());
        async move {
            let (store, down) = (answered(), OnStoreDown::Refuse);
            caching_replica(mock, &url, &dir, keys(), store, down, cache(scope)).await
        }
    };
    let a = start(da.path().into(), CacheScope::Store).await;
    let b = start(db.path().into(), CacheScope::Store).await;
    // `scope: run` answers only from the calls of its own run: never another replica's.
    let c = start(dc.path().into(), CacheScope::Run).await;
    let request = Request::user("asked of one replica, then another").with_max_tokens(16);
    let (status, _, first) = send(&a, ALICE, Dialect::Chat, "mock/echo", &request, false).await;
    assert_eq!(status, 200);
    let answered_by_a = format!("{}-1", replica_of(da.path()));

    // `answered`: A's row was committed before its reply ended, so B finds it at once.
    let (status, headers, again) =
        send(&b, ALICE, Dialect::Chat, "mock/echo", &request, false).await;
    assert_eq!(status, 200);
    assert_eq!(
        headers["x-switchyard-cache"].to_str().unwrap(),
        format!("hit; call={answered_by_a}")
    );
    assert_eq!(again, first, "the hit is A's reply, byte for byte");
    // The same canonical request from another dialect hits the same entry, translated.
    let (status, headers, _) =
        send(&b, ALICE, Dialect::Messages, "mock/echo", &request, true).await;
    assert_eq!(status, 200);
    assert_eq!(
        headers["x-switchyard-cache"].to_str().unwrap(),
        format!("hit; call={answered_by_a}; translated")
    );
    let (status, headers, _) = send(&c, ALICE, Dialect::Chat, "mock/echo", &request, false).await;
    assert_eq!(status, 200);
    assert!(headers.get("x-switchyard-cache").is_none(), "{headers:?}");
    for gw in [a, b, c] {
        gw.shutdown().await.unwrap();
    }
    let records = switchyard::record::read_records(db.path()).unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    for r in &records {
        assert_eq!(r.cache_hit, Some(1));
        assert_eq!(r.cache_hit_call.as_deref(), Some(answered_by_a.as_str()));
        assert_eq!(r.cost_usd, Some(0.0));
    }
    // Only A and C asked the provider.
    let upstream = switchyard::record::read_records(da.path()).unwrap().len()
        + switchyard::record::read_records(dc.path()).unwrap().len();
    assert_eq!(upstream, 2);
}

/// One `previous_response_id` chain served by two replicas in turn, each turn translated
/// to another backend dialect: the turn one replica kept is the history the other
/// expands (committed before the reply's last byte, so the next request finds it); and
/// another key is refused the chain on either replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_serve_one_chain_of_responses_in_turn() {
    let Some((c, url)) = fresh_db("replicas_conversations").await else {
        return;
    };
    let mock = MockServer::start().await;
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keys = || vec![key("alice", "ALICE_KEY", None), key("bob", "BOB_KEY", None)];
    let (store, down) = (StoreOptions::default(), OnStoreDown::Refuse);
    let a = replica(&mock, &url, da.path(), keys(), store, down).await;
    let b = replica(&mock, &url, db.path(), keys(), store, down).await;
    let post = |gw: &RunningGateway, key: &'static str, body: Value| {
        let url = format!("{}/v1/responses", gw.url());
        async move {
            let r = reqwest::Client::new()
                .post(url)
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let models = [
        "up-chat/echo",
        "up-messages/echo",
        "up-gemini/echo",
        "up-responses/echo",
        "up-chat/echo",
    ];
    let mut previous: Option<String> = None;
    for (turn, model) in models.iter().enumerate() {
        let gw = if turn % 2 == 0 { &a } else { &b };
        let mut body =
            serde_json::json!({"model": model, "input": format!("turn {turn} says hello")});
        if let Some(p) = &previous {
            body["previous_response_id"] = Value::from(p.as_str());
        }
        let (status, reply) = post(gw, ALICE, body.clone()).await;
        assert_eq!(status, 200, "turn {turn} on {model}: {reply}");
        let up = String::from_utf8_lossy(&mock.requests().pop().unwrap().body).into_owned();
        for earlier in 0..=turn {
            assert!(
                up.contains(&format!("turn {earlier} says hello")),
                "turn {turn} went up without turn {earlier}: {up}"
            );
        }
        if let Some(p) = &previous {
            // Bob is refused Alice's response on either replica.
            for gw in [&a, &b] {
                let (status, e) = post(gw, BOB, body.clone()).await;
                assert_eq!(status, 404, "{e}");
                assert_eq!(
                    e["error"]["code"], "previous_response_not_found",
                    "{p}: {e}"
                );
            }
        }
        previous = reply["id"].as_str().map(str::to_string);
    }
    assert_eq!(
        count(&c, "SELECT * FROM kept_conversations WHERE owner = 'alice'").await,
        5
    );
    for gw in [a, b] {
        gw.shutdown().await.unwrap();
    }
}
