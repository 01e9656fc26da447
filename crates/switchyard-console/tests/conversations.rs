//! The kept conversations over HTTP, from a `conversations.sqlite` built as a gateway
//! writes it beside a generated calls index: the newest first, expired turns never, each
//! row's chain, sizes, model and keeping backend, filters by key and kind, paging, one
//! turn's JSON under its key only, the refusals; and a directory without the file says it
//! keeps none and is left without one.

mod common;

use common::{get, serve};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `conversations.sqlite` in `dir` with the gateway's schema (its `conversations/local.rs`).
fn keep(dir: &Path, turns: &[(&str, &str, &str, i64, i64, String)]) {
    let db = Connection::open(dir.join("conversations.sqlite")).unwrap();
    db.pragma_update(None, "journal_mode", "WAL").unwrap();
    db.execute_batch(
        "CREATE TABLE kept (kind TEXT NOT NULL, owner TEXT NOT NULL, id TEXT NOT NULL,
            created INTEGER NOT NULL, expires INTEGER NOT NULL, turn TEXT NOT NULL,
            PRIMARY KEY (kind, owner, id));
         CREATE INDEX kept_expires ON kept (expires);
         CREATE TABLE kept_items (owner TEXT NOT NULL, item_id TEXT NOT NULL, id TEXT NOT NULL,
            PRIMARY KEY (owner, item_id));
         PRAGMA user_version = 1;",
    )
    .unwrap();
    for (kind, owner, id, created, expires, turn) in turns {
        db.execute(
            "INSERT INTO kept (kind, owner, id, created, expires, turn) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![kind, owner, id, created, expires, turn],
        )
        .unwrap();
    }
}

fn response(previous: Option<&str>, upstream: Option<&str>, model: &str, inputs: usize) -> String {
    let mut t = json!({
        "input": (0..inputs).map(|i| json!({"id": format!("msg_in{i}"), "type": "message", "role": "user", "content": "hi"})).collect::<Vec<_>>(),
        "output": [{"id": "msg_out", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}],
        "response": {"id": "resp", "object": "response", "model": model, "status": "completed"},
    });
    if let Some(p) = previous {
        t["previous"] = json!(p);
    }
    if let Some(u) = upstream {
        t["upstream"] = json!(u);
    }
    t.to_string()
}

fn ids(page: &Value) -> Vec<&str> {
    page["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect()
}

async fn store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    common::generate::generate(dir.path(), 5);
    let t = now();
    let thread = |previous: Option<&str>| {
        let mut v = json!({"input": [{"role": "user", "content": "look it up"}],
            "output": [{"role": "assistant", "content": [{"type": "text", "text": "found"}]}],
            "system": "be brief"});
        if let Some(p) = previous {
            v["previous"] = json!(p);
        }
        v.to_string()
    };
    keep(
        dir.path(),
        &[
            (
                "response",
                "alice",
                "resp_1",
                t - 50,
                t + 3600,
                response(None, None, "up-chat/echo", 2),
            ),
            (
                "response",
                "alice",
                "resp_2",
                t - 40,
                t + 3600,
                response(Some("resp_1"), Some("openai"), "up-chat/echo", 1),
            ),
            (
                "response",
                "bob",
                "resp_b",
                t - 30,
                t + 3600,
                response(None, None, "mock/echo", 1),
            ),
            ("thread", "", "msg_1", t - 20, t + 3600, thread(None)),
            (
                "thread",
                "",
                "msg_2",
                t - 10,
                t + 3600,
                thread(Some("msg_1")),
            ),
            // Expired: never shown, not even by its id.
            (
                "response",
                "alice",
                "resp_old",
                t - 100,
                t - 1,
                response(None, None, "old", 1),
            ),
            // Not JSON: its row still shows, empty.
            (
                "response",
                "carol",
                "resp_bad",
                t - 60,
                t + 3600,
                "{not json".to_string(),
            ),
        ],
    );
    let url = serve(dir.path()).await;
    (dir, url)
}

#[tokio::test]
async fn kept_turns_come_newest_first_without_the_expired_and_say_what_they_are() {
    let (_dir, url) = store().await;
    let (s, page) = get(&url, "/console/api/conversations").await;
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["kept"], true);
    assert_eq!(page["total"], 6);
    assert_eq!(
        (page["limit"].as_u64(), page["offset"].as_u64()),
        (Some(50), Some(0))
    );
    assert_eq!(
        ids(&page),
        ["msg_2", "msg_1", "resp_b", "resp_2", "resp_1", "resp_bad"]
    );
    let t = &page["turns"][3];
    assert_eq!(t["kind"], "response");
    assert_eq!(t["key"], "alice");
    assert_eq!(t["previous"], "resp_1");
    assert_eq!(t["upstream"], "openai");
    assert_eq!(t["model"], "up-chat/echo");
    assert_eq!(
        (t["input_items"].as_u64(), t["output_items"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(t["expires"].as_i64().unwrap() > t["created"].as_i64().unwrap());
    assert_eq!(page["turns"][4]["input_items"], 2);
    assert_eq!(page["turns"][4]["previous"], Value::Null);
    // A thread has no model; its previous is the reply before it.
    let m = &page["turns"][0];
    assert_eq!(
        (m["kind"].as_str(), m["key"].as_str()),
        (Some("thread"), Some(""))
    );
    assert_eq!(
        (m["previous"].as_str(), m["model"].as_str()),
        (Some("msg_1"), None)
    );
    let bad = &page["turns"][5];
    assert_eq!(
        (bad["input_items"].as_u64(), bad["model"].as_str()),
        (Some(0), None)
    );
}

#[tokio::test]
async fn filters_by_key_and_kind_and_pages() {
    let (_dir, url) = store().await;
    let (_, p) = get(&url, "/console/api/conversations?key=alice").await;
    assert_eq!(ids(&p), ["resp_2", "resp_1"]);
    let (_, p) = get(&url, "/console/api/conversations?key=(none)").await;
    assert_eq!(ids(&p), ["msg_2", "msg_1"]);
    let (_, p) = get(&url, "/console/api/conversations?kind=response").await;
    assert_eq!(p["total"], 4);
    let (_, p) = get(&url, "/console/api/conversations?kind=thread&key=alice").await;
    assert_eq!(p["total"], 0);
    let (_, p) = get(&url, "/console/api/conversations?limit=2&offset=2").await;
    assert_eq!(
        (p["total"].as_u64(), ids(&p)),
        (Some(6), vec!["resp_b", "resp_2"])
    );
    // A blank field filters nothing.
    let (_, p) = get(&url, "/console/api/conversations?key=&kind=").await;
    assert_eq!(p["total"], 6);
    for (q, name, says) in [
        ("kind=chat", "kind", "response, thread"),
        ("limit=0", "limit", "from 1 to 500"),
        ("status=ok", "status", "accepted: limit, offset, key, kind"),
        ("key=a&key=b", "key", "twice"),
    ] {
        let (s, e) = get(&url, &format!("/console/api/conversations?{q}")).await;
        assert_eq!(s, 400, "{q}: {e}");
        assert_eq!(e["error"]["parameter"], name);
        assert!(
            e["error"]["message"].as_str().unwrap().contains(says),
            "{e}"
        );
    }
}

#[tokio::test]
async fn one_turn_opens_under_its_key_only() {
    let (_dir, url) = store().await;
    let (s, t) = get(&url, "/console/api/conversations/response/resp_2?key=alice").await;
    assert_eq!(s, 200, "{t}");
    assert_eq!(t["previous"], "resp_1");
    assert_eq!(t["turn"]["previous"], "resp_1");
    assert_eq!(t["turn"]["response"]["model"], "up-chat/echo");
    assert_eq!(t["turn"]["input"][0]["id"], "msg_in0");
    let (s, t) = get(&url, "/console/api/conversations/thread/msg_2?key=(none)").await;
    assert_eq!(s, 200, "{t}");
    assert_eq!(t["turn"]["system"], "be brief");
    for path in [
        "/console/api/conversations/response/resp_2?key=bob",
        "/console/api/conversations/thread/resp_2?key=alice",
        "/console/api/conversations/response/resp_old?key=alice",
    ] {
        let (s, e) = get(&url, path).await;
        assert_eq!(s, 404, "{path}: {e}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains("expired"),
            "{e}"
        );
    }
    let (s, e) = get(
        &url,
        "/console/api/conversations/response/resp_bad?key=carol",
    )
    .await;
    assert_eq!(s, 500, "{e}");
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("does not read as JSON"));
    let (s, e) = get(&url, "/console/api/conversations/response/resp_2").await;
    assert_eq!(s, 400);
    assert_eq!(e["error"]["parameter"], "key");
    let (s, e) = get(&url, "/console/api/conversations/chat/resp_2?key=alice").await;
    assert_eq!(s, 400);
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("response, thread"));
}

#[tokio::test]
async fn a_directory_that_keeps_none_says_so_and_gets_no_file() {
    let dir = tempfile::tempdir().unwrap();
    common::generate::generate(dir.path(), 5);
    let url = serve(dir.path()).await;
    let (s, p) = get(&url, "/console/api/conversations").await;
    assert_eq!(s, 200, "{p}");
    assert_eq!(
        (p["kept"].as_bool(), p["total"].as_u64()),
        (Some(false), Some(0))
    );
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .contains("keeps no conversations"),
        "{p}"
    );
    let (s, _) = get(&url, "/console/api/conversations/response/resp_1?key=alice").await;
    assert_eq!(s, 404);
    assert!(!dir.path().join("conversations.sqlite").exists());
}
