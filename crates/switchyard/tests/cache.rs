//! A run's response cache (`cache:` in the run config): an identical call is answered
//! from the call log — its recorded raw bytes — without calling the provider, whole and
//! streamed, recorded as a hit at no cost and never counted against the budget; with
//! `scope: store` a rerun in another run directory answers from the runs beside it.

use futures::StreamExt;
use std::path::Path;
use switchyard::env::MapEnv;
use switchyard::record::read_records;
use switchyard::run::Run;
use switchyard::{Event, Request};
use switchyard_mock::MockServer;

fn open(dir: &Path, log: &str, cache: &str, env: &MapEnv) -> switchyard::Result<Run> {
    let path = dir.join(format!("{}.yaml", log.replace('/', "_")));
    std::fs::write(
        &path,
        format!(
            "llm:\n  writer: mock/echo\n  other: mock/small\nbackends: {{mock: {{prices: {{echo: {{input: 1, output: 2}}, small: {{input: 1, output: 2}}}}}}}}\nbudget: {{max_calls: 3}}\nlog: {}\ncache: {cache}\n",
            dir.join(log).display()
        ),
    )
    .unwrap();
    Run::builder(&path).env(env).user_file(false).open()
}

fn env(mock: &MockServer) -> MapEnv {
    MapEnv::new([("MOCK_BASE_URL", mock.base_url())])
}

async fn streamed_text(run: &Run, role: &str, request: Request) -> String {
    let mut stream = run.llm(role).unwrap().stream(request).await.unwrap();
    let mut text = String::new();
    while let Some(e) = stream.next().await {
        if let Event::TextDelta { text: t, .. } = e.unwrap() {
            text.push_str(&t);
        }
    }
    text
}

#[tokio::test]
async fn a_repeated_call_is_answered_from_the_log_byte_for_byte_and_never_charged() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let env = env(&mock);
    let run = open(tmp.path(), "runs/one", "read-write", &env).unwrap();
    let writer = run.llm("writer").unwrap();
    let request = Request::user("what is a cache?").with_max_tokens(16);
    let first = writer.complete(request.clone()).await.unwrap();
    assert_eq!(mock.received(), 1);
    // The budget allows three calls: hits are not among them.
    for _ in 0..5 {
        let again = writer.complete(request.clone()).await.unwrap();
        assert_eq!(again.raw, first.raw, "the recorded bytes, byte for byte");
        assert_eq!(again.text(), first.text());
        assert_eq!(again.usage, first.usage);
    }
    assert_eq!(mock.received(), 1, "hits call no provider");
    // Streamed: the whole reply answers as a stream; then a streamed call is entered
    // and answers a stream as it was recorded.
    assert_eq!(
        streamed_text(&run, "writer", request.clone()).await,
        first.text()
    );
    let other = Request::user("what is a stream?").with_max_tokens(16);
    let streamed = streamed_text(&run, "writer", other.clone()).await;
    assert_eq!(mock.received(), 2);
    assert_eq!(streamed_text(&run, "writer", other.clone()).await, streamed);
    assert_eq!(mock.received(), 2);
    // Another model, other settings: other calls.
    run.llm("other")
        .unwrap()
        .complete(request.clone())
        .await
        .unwrap();
    let refused = writer
        .complete(request.clone().with_max_tokens(17))
        .await
        .unwrap_err();
    assert_eq!(
        refused.kind(),
        switchyard::ErrorKind::BudgetExceeded,
        "max_calls 3: {refused}"
    );
    run.recorder().unwrap().close().unwrap();

    let records = read_records(&tmp.path().join("runs/one")).unwrap();
    let hits: Vec<_> = records.iter().map(|r| r.cache_hit).collect();
    assert_eq!(
        hits,
        [
            None,
            Some(1),
            Some(1),
            Some(1),
            Some(1),
            Some(1),
            Some(1),
            None,
            Some(8),
            None
        ]
    );
    for r in records.iter().filter(|r| r.cache_hit.is_some()) {
        assert_eq!(r.cost_usd, Some(0.0));
        assert!(r.attempts.is_empty());
        assert!(r.cache_key.is_none());
    }
    assert!(records[0].cache_key.is_some() && records[0].cost_usd.unwrap() > 0.0);
    assert_eq!(
        records[1].raw, records[0].raw,
        "a hit's record keeps the bytes"
    );
    assert!(records[6].stream && records[8].stream);
    assert_eq!(records[8].raw, records[7].raw);
}

#[tokio::test]
async fn scope_store_answers_a_rerun_from_the_runs_beside_it_and_run_does_not() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let env = env(&mock);
    let request = Request::user("an experiment").with_max_tokens(16);
    let run = open(tmp.path(), "runs/monday", "read-write", &env).unwrap();
    let first = run
        .llm("writer")
        .unwrap()
        .complete(request.clone())
        .await
        .unwrap();
    run.recorder().unwrap().close().unwrap();
    assert_eq!(mock.received(), 1);

    // The default scope is the run's own log: a new run directory pays again.
    let run = open(tmp.path(), "runs/tuesday", "read-write", &env).unwrap();
    let second = run
        .llm("writer")
        .unwrap()
        .complete(request.clone())
        .await
        .unwrap();
    assert_ne!(second.raw, first.raw);
    run.recorder().unwrap().close().unwrap();
    assert_eq!(mock.received(), 2);

    // `scope: store`: the runs beside it answer (the newest call), across a restart of
    // the program.
    let run = open(
        tmp.path(),
        "runs/wednesday",
        "{mode: read-write, scope: store}",
        &env,
    )
    .unwrap();
    let again = run
        .llm("writer")
        .unwrap()
        .complete(request.clone())
        .await
        .unwrap();
    assert_eq!(again.raw, second.raw);
    run.recorder().unwrap().close().unwrap();
    assert_eq!(mock.received(), 2);
    let records = read_records(&tmp.path().join("runs/wednesday")).unwrap();
    assert_eq!(records[0].cache_hit, Some(1));
    let from = records[0].cache_run.as_deref().unwrap();
    assert!(from.ends_with("runs/tuesday"), "{from}");
}

#[tokio::test]
async fn a_cache_without_a_log_and_a_bad_section_are_refused_naming_why() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("run.yaml");
    std::fs::write(&path, "llm:\n  writer: mock/echo\ncache: read-write\n").unwrap();
    let e = Run::builder(&path).user_file(false).open().unwrap_err();
    assert!(e.to_string().contains("add `log: <dir>`"), "{e}");
    std::fs::write(
        &path,
        "llm:\n  writer: mock/echo\nlog: runs/x\ncache: {mode: sometimes, scope: disk}\n",
    )
    .unwrap();
    let e = Run::builder(&path)
        .user_file(false)
        .open()
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected one of off, read, read-write"), "{e}");
    assert!(e.contains("expected one of run, store"), "{e}");
}

#[tokio::test]
async fn an_index_from_before_the_cache_columns_is_upgraded_and_its_entries_found() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let env = env(&mock);
    let request = Request::user("recorded before the upgrade").with_max_tokens(16);
    let run = open(tmp.path(), "runs/old", "read-write", &env).unwrap();
    let first = run
        .llm("writer")
        .unwrap()
        .complete(request.clone())
        .await
        .unwrap();
    run.recorder().unwrap().close().unwrap();
    {
        // The index as version 2 wrote it: no cache columns.
        let db = rusqlite::Connection::open(tmp.path().join("runs/old/calls.sqlite")).unwrap();
        db.execute_batch(
            "DROP INDEX llm_calls_cache_key;
             ALTER TABLE llm_calls DROP COLUMN cache_key;
             ALTER TABLE llm_calls DROP COLUMN cache_hit;
             ALTER TABLE llm_calls DROP COLUMN client_dialect;
             PRAGMA user_version = 2;",
        )
        .unwrap();
    }
    let run = open(tmp.path(), "runs/new", "{mode: read, scope: store}", &env).unwrap();
    let again = run.llm("writer").unwrap().complete(request).await.unwrap();
    assert_eq!(again.raw, first.raw);
    assert_eq!(mock.received(), 1);
    let db = rusqlite::Connection::open(tmp.path().join("runs/old/calls.sqlite")).unwrap();
    let version: i64 = db
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, switchyard::record::INDEX_VERSION);
}

#[tokio::test]
async fn embeddings_are_answered_from_the_cache_as_recorded() {
    use switchyard::wire::embed::{EmbedRequest, EncodingFormat};
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let env = env(&mock);
    let run = open(tmp.path(), "runs/vectors", "read-write", &env).unwrap();
    let writer = run.llm("writer").unwrap();
    let ask = EmbedRequest::texts(["hello", "x"]);
    let first = writer.embed(ask.clone()).await.unwrap();
    let again = writer.embed(ask.clone()).await.unwrap();
    assert_eq!(again.vectors, first.vectors);
    assert_eq!(again.raw, first.raw);
    assert_eq!(mock.received(), 1);
    // Another encoding is another call; a chat call with the same text shares nothing.
    writer
        .embed(ask.clone().with_encoding(EncodingFormat::Base64))
        .await
        .unwrap();
    assert_eq!(mock.received(), 2);
    run.recorder().unwrap().close().unwrap();
    let records = read_records(&tmp.path().join("runs/vectors")).unwrap();
    let hits: Vec<_> = records.iter().map(|r| r.cache_hit).collect();
    assert_eq!(hits, [None, Some(1), None]);
    assert_eq!(records[1].cost_usd, Some(0.0));
    assert!(records[1].embedding.is_some() && records[0].cache_key.is_some());
}

/// A role's settings are the request's: a role's `temperature` above zero keeps its calls
/// out of the cache as a request's own would, unless `temperature_above_zero: true`; and
/// the record's request holds the role's settings, as sent.
#[tokio::test]
async fn a_roles_temperature_is_seen_by_the_caches_rule() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let env = env(&mock);
    for (n, (cache, calls)) in [
        ("read-write", 2),
        ("{mode: read-write, temperature_above_zero: true}", 1),
    ]
    .into_iter()
    .enumerate()
    {
        mock.clear();
        let log = tmp.path().join(format!("warm-{n}"));
        let path = tmp.path().join(format!("warm-{n}.yaml"));
        std::fs::write(
            &path,
            format!(
                "llm:\n  poet: {{model: mock/echo, temperature: 0.7}}\nlog: {}\ncache: {cache}\n",
                log.display()
            ),
        )
        .unwrap();
        let run = Run::builder(&path)
            .env(&env)
            .user_file(false)
            .open()
            .unwrap();
        let poet = run.llm("poet").unwrap();
        for _ in 0..2 {
            poet.complete(Request::user("a poem")).await.unwrap();
        }
        assert_eq!(mock.received(), calls, "cache: {cache}");
        run.recorder().unwrap().close().unwrap();
        let records = read_records(&log).unwrap();
        assert_eq!(records[0].request.temperature, Some(0.7), "cache: {cache}");
        assert_eq!(records[0].parameters["temperature"], 0.7, "cache: {cache}");
    }
}
