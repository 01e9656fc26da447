//! The PostgreSQL store against a real server: the schema created and upgraded, call
//! records written once however often a batch is retried, one budget and one rpm limit
//! held across two replicas' connections; the console of one replica showing every
//! replica's calls and kept conversations.
//!
//! The server comes from `scripts/pg start` (which `scripts/test` runs), named by
//! `SWITCHYARD_TEST_PG_URL`. Without it these tests fail under CI and are skipped, saying
//! so, elsewhere. Each test works in a database of its own, so they run in parallel.

mod common;

use common::pg::fresh_db;
use common::recording::{call, gateway, key, records, ALICE};
use std::sync::Arc;
use switchyard_gateway::pg::{self, ledger, records as pg_records, schema};
use switchyard_mock::MockServer;
use switchyard_wire::Dialect;
use tokio_postgres::Client;

async fn table_exists(c: &Client, table: &str) -> bool {
    c.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn the_schema_is_created_then_upgraded_from_an_older_version() {
    let Some((mut fresh, _)) = fresh_db("schema_fresh").await else {
        return;
    };
    assert_eq!(schema::version(&fresh).await.unwrap(), 0);
    assert_eq!(schema::migrate(&mut fresh).await.unwrap(), 0);
    assert_eq!(
        schema::version(&fresh).await.unwrap(),
        schema::SCHEMA_VERSION
    );
    assert!(table_exists(&fresh, "llm_calls").await && table_exists(&fresh, "spend_ledger").await);
    // Again: nothing to do.
    assert_eq!(
        schema::migrate(&mut fresh).await.unwrap(),
        schema::SCHEMA_VERSION
    );

    // A database left at version 1 (as an older gateway made it), with a row in it.
    let Some((mut old, _)) = fresh_db("schema_old").await else {
        return;
    };
    old.batch_execute(&format!(
        "CREATE TABLE switchyard_schema (one boolean PRIMARY KEY DEFAULT true CHECK (one),
            version integer NOT NULL);
         INSERT INTO switchyard_schema (version) VALUES (1);
         {}
         INSERT INTO llm_calls (call_id, replica, number, started_at, role, reference, backend,
            model, stream, latency_ms, attempts, record)
         VALUES ('r-1', 'r', 1, 't', 'default', 'mock/echo', 'mock', 'echo', false, 1, 1, '\\x7b7d');",
        schema::MIGRATIONS[0]
    ))
    .await
    .unwrap();
    assert!(!table_exists(&old, "spend_ledger").await);
    assert_eq!(schema::migrate(&mut old).await.unwrap(), 1);
    assert_eq!(schema::version(&old).await.unwrap(), schema::SCHEMA_VERSION);
    assert!(table_exists(&old, "spend_ledger").await && table_exists(&old, "rate_windows").await);
    let kept: i64 = old
        .query_one("SELECT count(*) FROM llm_calls", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, 1, "the upgrade kept the rows");

    // A database newer than this build is refused, not written.
    old.execute("UPDATE switchyard_schema SET version = 99", &[])
        .await
        .unwrap();
    let e = schema::migrate(&mut old).await.unwrap_err().to_string();
    assert!(e.contains("version 99, newer than this gateway's"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_is_stored_in_full_and_a_retried_batch_writes_nothing_twice() {
    let Some((mut c, _)) = fresh_db("records").await else {
        return;
    };
    schema::migrate(&mut c).await.unwrap();
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), vec![key("alice", "ALICE_KEY", None)]).await;
    const N: usize = 20;
    for i in 0..N {
        let (status, _, _) = call(
            &gw,
            ALICE,
            Dialect::Chat,
            "mock/echo",
            &format!("call {i}"),
            i % 2 == 1,
        )
        .await;
        assert_eq!(status, 200);
    }
    let (written, _) = records(dir.path(), N).await;
    assert_eq!(written.len(), N);

    assert_eq!(
        pg_records::insert_batch(&c, "replica-a", &written)
            .await
            .unwrap(),
        N as u64
    );
    // The same batch again (its commit's answer lost, say): no row twice.
    assert_eq!(
        pg_records::insert_batch(&c, "replica-a", &written)
            .await
            .unwrap(),
        0
    );

    let row = c
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE client_key = 'alice'),
                sum(input_tokens)::bigint, count(*) FILTER (WHERE stream)
             FROM llm_calls WHERE replica = 'replica-a'",
            &[],
        )
        .await
        .unwrap();
    let input: i64 = written.iter().map(|r| r.usage.unwrap().input as i64).sum();
    assert_eq!(row.get::<_, i64>(0), N as i64);
    assert_eq!(row.get::<_, i64>(1), N as i64);
    assert_eq!(row.get::<_, i64>(2), input);
    assert_eq!(row.get::<_, i64>(3), (N / 2) as i64);

    // In full: each record reads back equal to the segment's.
    let back = pg_records::read_all(&c).await.unwrap();
    let mut a: Vec<_> = back
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    let mut want: Vec<_> = written
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    want.sort_by_key(|v| v["number"].as_u64());
    a.sort_by_key(|v| v["number"].as_u64());
    assert_eq!(a, want);
    // Another replica's numbers are its own calls.
    assert_eq!(
        pg_records::insert_batch(&c, "replica-b", &written[..3])
            .await
            .unwrap(),
        3
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_sharing_one_budget_never_spend_past_it() {
    let Some((mut c, url)) = fresh_db("budget").await else {
        return;
    };
    schema::migrate(&mut c).await.unwrap();
    let replicas = [Arc::new(c), Arc::new(pg::connect(&url).await.unwrap())];
    // 1,000 calls, each reserving its most possible cost (0.01) and costing 0.007 of it.
    const BUDGET: f64 = 1.0;
    let tasks: Vec<_> = (0..1000)
        .map(|i| {
            let client = replicas[i % 2].clone();
            tokio::spawn(async move {
                let held = ledger::reserve(&client, "alice", "day:2026-12-02", 0.01, BUDGET)
                    .await
                    .unwrap();
                if held.is_some() {
                    ledger::settle(&client, "alice", "day:2026-12-02", 0.01, 0.007)
                        .await
                        .unwrap();
                }
                held.is_some()
            })
        })
        .collect();
    let mut admitted = 0;
    for t in tasks {
        admitted += t.await.unwrap() as usize;
    }
    let (spent, reserved) = ledger::balance(&replicas[0], "alice", "day:2026-12-02")
        .await
        .unwrap();
    assert!(
        spent <= BUDGET + 1e-9,
        "spent {spent} past the budget {BUDGET}"
    );
    assert!(reserved.abs() < 1e-9, "{reserved} left reserved");
    assert!(
        (spent - admitted as f64 * 0.007).abs() < 1e-6,
        "spent {spent} for {admitted} calls"
    );
    // At least what fits when every call holds its most: 100.
    assert!(admitted >= 100, "only {admitted} admitted");
    assert!(admitted < 1000, "the budget never refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_rpm_limit_holds_across_two_replicas() {
    let Some((mut c, url)) = fresh_db("rpm").await else {
        return;
    };
    schema::migrate(&mut c).await.unwrap();
    let replicas = [Arc::new(c), Arc::new(pg::connect(&url).await.unwrap())];
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let client = replicas[i % 2].clone();
            tokio::spawn(async move {
                ledger::take_request(&client, "alice", 1_700_000_040, Some(50), None)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut taken = 0;
    for t in tasks {
        taken += t.await.unwrap() as usize;
    }
    assert_eq!(taken, 50);
    // The next minute is a window of its own.
    assert!(
        ledger::take_request(&replicas[1], "alice", 1_700_000_100, Some(50), None)
            .await
            .unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_upgrade_the_schema_once() {
    let Some((first, url)) = fresh_db("schema_race").await else {
        return;
    };
    let mut replicas = vec![first];
    for _ in 0..3 {
        replicas.push(pg::connect(&url).await.unwrap());
    }
    let tasks: Vec<_> = replicas
        .into_iter()
        .map(|mut c| tokio::spawn(async move { schema::migrate(&mut c).await }))
        .collect();
    let mut was = Vec::new();
    for t in tasks {
        was.push(t.await.unwrap().unwrap());
    }
    // One found the database empty; the others, behind the lock, found it done.
    was.sort();
    let v = schema::SCHEMA_VERSION;
    assert_eq!(was, [0, v, v, v]);
}

/// The console of a replica sharing the store shows every replica's calls (the database's
/// `llm_calls`), named by their ids, with the keys' spend; only an admin key reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_of_one_replica_shows_every_replicas_calls() {
    use common::pg::replica;
    use switchyard_gateway::{keys::digest, KeySecret, KeySpec, StoreOptions};
    let Some((mut c, url)) = fresh_db("console").await else {
        return;
    };
    schema::migrate(&mut c).await.unwrap();
    const ADMIN: &str = "sk-console-admin-pg-0123";
    let keys = || {
        vec![
            key("alice", "ALICE_KEY", None),
            KeySpec {
                admin: true,
                ..KeySpec::new("ops", KeySecret::Sha256(digest(ADMIN.as_bytes())))
            },
        ]
    };
    let mock = MockServer::start().await;
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let down = pg::OnStoreDown::Refuse;
    let a = replica(
        &mock,
        &url,
        da.path(),
        keys(),
        StoreOptions::default(),
        down,
    )
    .await;
    let b = replica(
        &mock,
        &url,
        db.path(),
        keys(),
        StoreOptions::default(),
        down,
    )
    .await;
    for (gw, text) in [(&a, "one"), (&a, "two"), (&b, "three")] {
        let (s, _, _) = call(gw, ALICE, Dialect::Chat, "mock/echo", text, false).await;
        assert_eq!(s, 200);
    }
    let get = |path: &str, key: &str| {
        let url = format!("{}{path}", a.url());
        let key = key.to_string();
        async move {
            let r = reqwest::Client::new()
                .get(url)
                .header("authorization", format!("Bearer {key}"))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (
                status,
                r.json::<serde_json::Value>().await.unwrap_or_default(),
            )
        }
    };
    // Shipped to the database off the calls' path: wait for all three.
    let start = std::time::Instant::now();
    let page = loop {
        let (s, page) = get("/console/api/calls", ADMIN).await;
        if s == 200 && page["total"] == 3 {
            break page;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{s} {page}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let (s, _) = get("/console/api/calls", ALICE).await;
    assert_eq!(s, 403);
    let ids: Vec<&str> = page["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let replicas: std::collections::BTreeSet<&str> = ids
        .iter()
        .map(|id| id.rsplit_once('-').unwrap().0)
        .collect();
    assert_eq!(replicas.len(), 2, "both replicas' calls: {ids:?}");
    let (s, one) = get(&format!("/console/api/calls/{}", ids[0]), ADMIN).await;
    assert_eq!(s, 200, "{one}");
    assert_eq!(one["record"]["client_key"], "alice");
    let (s, _) = get("/console/api/calls/nobody-1", ADMIN).await;
    assert_eq!(s, 404);
    let (_, summary) = get("/console/api/summary", ADMIN).await;
    assert_eq!(summary["calls"], 3);
    assert!(summary["source"].as_str().unwrap().contains("PostgreSQL"));
    let (_, spend) = get("/console/api/spend?by=key&status=ok", ADMIN).await;
    let calls: u64 = spend["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(calls, 3, "{spend}");
    let (_, sorted) = get("/console/api/calls?sort=cost&order=asc&key=alice", ADMIN).await;
    assert_eq!(sorted["total"], 3);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_of_one_replica_shows_the_conversations_every_replica_keeps() {
    use common::pg::replica;
    use serde_json::{json, Value};
    use switchyard_gateway::{keys::digest, KeySecret, KeySpec, StoreOptions};
    let Some((mut c, url)) = fresh_db("console_kept").await else {
        return;
    };
    schema::migrate(&mut c).await.unwrap();
    const ADMIN: &str = "sk-console-admin-pg-4567";
    let keys = || {
        vec![
            key("alice", "ALICE_KEY", None),
            KeySpec {
                admin: true,
                ..KeySpec::new("ops", KeySecret::Sha256(digest(ADMIN.as_bytes())))
            },
        ]
    };
    let mock = MockServer::start().await;
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let down = pg::OnStoreDown::Refuse;
    let opts = StoreOptions::default;
    let a = replica(&mock, &url, da.path(), keys(), opts(), down).await;
    let b = replica(&mock, &url, db.path(), keys(), opts(), down).await;
    let post = |base: String, path: &'static str, body: Value| async move {
        let r = reqwest::Client::new()
            .post(format!("{base}{path}"))
            .header("anthropic-version", "2023-06-01")
            .bearer_auth(ALICE)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json::<Value>().await.unwrap()
    };
    let get = |path: String, key: &'static str| {
        let url = format!("{}{path}", a.url());
        async move {
            let r = reqwest::Client::new()
                .get(url)
                .bearer_auth(key)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap_or_default())
        }
    };
    // A chain served in turn by both replicas, and a thread on the second.
    let r1 = post(
        a.url(),
        "/v1/responses",
        json!({"model": "up-chat/echo", "input": "one"}),
    )
    .await;
    let r2 = post(
        b.url(),
        "/v1/responses",
        json!({"model": "up-chat/echo", "input": "two", "previous_response_id": r1["id"]}),
    )
    .await;
    let m1 = post(
        b.url(),
        "/v1/messages",
        json!({"model": "up-chat/echo", "max_tokens": 64, "thread": {"type": "create"},
            "messages": [{"role": "user", "content": "three"}]}),
    )
    .await;
    // An expired turn, as a sweep has not yet removed it: never shown.
    c.execute(
        "INSERT INTO kept_conversations (kind, owner, id, created, expires, turn)
         VALUES ('response', 'alice', 'resp_gone', 1, 2, '{\"input\":[],\"output\":[]}')",
        &[],
    )
    .await
    .unwrap();

    let (s, _) = get("/console/api/conversations".into(), ALICE).await;
    assert_eq!(s, 403);
    let (s, all) = get("/console/api/conversations".into(), ADMIN).await;
    assert_eq!(s, 200, "{all}");
    assert_eq!(
        (all["kept"].as_bool(), all["total"].as_u64()),
        (Some(true), Some(3)),
        "{all}"
    );
    assert!(all["turns"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["key"] == "alice"));
    let (_, responses) = get(
        "/console/api/conversations?kind=response&key=alice".into(),
        ADMIN,
    )
    .await;
    let turns = responses["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{responses}");
    let second = turns.iter().find(|t| t["id"] == r2["id"]).unwrap();
    assert_eq!(second["previous"], r1["id"]);
    assert_eq!(second["model"], r2["model"]);
    assert!(
        second["input_items"].as_u64().unwrap() >= 1
            && second["output_items"].as_u64().unwrap() >= 1
    );
    let (_, page) = get("/console/api/conversations?limit=1&offset=2".into(), ADMIN).await;
    assert_eq!(
        (
            page["total"].as_u64(),
            page["turns"].as_array().unwrap().len()
        ),
        (Some(3), 1)
    );
    let (s, thread) = get(
        format!(
            "/console/api/conversations/thread/{}?key=alice",
            m1["id"].as_str().unwrap()
        ),
        ADMIN,
    )
    .await;
    assert_eq!(s, 200, "{thread}");
    assert_eq!(thread["turn"]["input"][0]["content"], "three");
    let (s, _) = get(
        "/console/api/conversations/response/resp_gone?key=alice".into(),
        ADMIN,
    )
    .await;
    assert_eq!(s, 404);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}
