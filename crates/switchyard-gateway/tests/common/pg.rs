//! A PostgreSQL database per test on the server `scripts/pg start` brings up (named by
//! `SWITCHYARD_TEST_PG_URL`; `scripts/test` starts it), and gateway replicas sharing it.

use super::recording::{ALICE, BOB, UPSTREAM};
use std::path::Path;
use switchyard::env::MapEnv;
use switchyard_gateway::cache::CacheConfig;
use switchyard_gateway::{pg, start, GatewayConfig, KeySpec, RunningGateway, StoreOptions};
use switchyard_mock::MockServer;
use tokio_postgres::Client;

/// How to get a server, for the messages of a test that has none.
pub(crate) const HOW: &str =
    "start one with `eval \"$(scripts/pg start)\"` (stop it with `scripts/pg stop`); scripts/test does this itself";

/// The test server's URL; `None` (the test is skipped, saying so) outside CI without one.
/// Under CI a missing server fails the test.
pub(crate) fn server_url() -> Option<String> {
    match std::env::var("SWITCHYARD_TEST_PG_URL") {
        Ok(url) => Some(url),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "SWITCHYARD_TEST_PG_URL is not set under CI: {HOW}"
            );
            eprintln!("skipped: no PostgreSQL for this test; {HOW}");
            None
        }
    }
}

/// `url` with its database replaced by `db`.
pub(crate) fn with_db(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    format!("{}/{db}{query}", base.rsplit_once('/').unwrap().0)
}

/// A fresh database `sy_<name>` on the server at `admin_url`, with a client on it and
/// its URL.
pub(crate) async fn fresh_db_on(admin_url: &str, name: &str) -> (Client, String) {
    let db = format!("sy_{name}");
    let admin = pg::connect(admin_url).await.unwrap();
    // One statement each: a multi-statement string runs as one transaction, which
    // neither may run in.
    for sql in [
        format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
        format!("CREATE DATABASE {db}"),
    ] {
        admin.batch_execute(&sql).await.unwrap();
    }
    let url = with_db(admin_url, &db);
    (pg::connect(&url).await.unwrap(), url)
}

/// A fresh database named after the test on the test server, or `None` (skipped)
/// outside CI without a server.
pub(crate) async fn fresh_db(name: &str) -> Option<(Client, String)> {
    let admin_url = server_url()?;
    Some(fresh_db_on(&admin_url, name).await)
}

/// A gateway replica recording into `dir` and sharing the database at `url` (read from
/// `PG_URL`, as an operator's config names it), `echo` priced at $1/$2 per million
/// tokens, with `keys`.
pub(crate) async fn replica(
    mock: &MockServer,
    url: &str,
    dir: &Path,
    keys: Vec<KeySpec>,
    store_options: StoreOptions,
    on_store_down: pg::OnStoreDown,
) -> RunningGateway {
    let cache = CacheConfig::default();
    caching_replica(mock, url, dir, keys, store_options, on_store_down, cache).await
}

/// [`replica`], its cache configured as `cache`.
pub(crate) async fn caching_replica(
    mock: &MockServer,
    url: &str,
    dir: &Path,
    keys: Vec<KeySpec>,
    store_options: StoreOptions,
    on_store_down: pg::OnStoreDown,
    cache: CacheConfig,
) -> RunningGateway {
    let config = GatewayConfig {
        cache,
        retry: switchyard::RetryPolicy::never(),
        keys,
        store: Some(dir.to_path_buf()),
        store_options,
        postgres: Some(pg::PgStoreConfig {
            url_env: "PG_URL".into(),
            on_store_down,
            ..pg::PgStoreConfig::default()
        }),
        ..GatewayConfig::default()
    };
    let env = MapEnv::new([
        ("ALICE_KEY", ALICE),
        ("BOB_KEY", BOB),
        ("UPSTREAM_KEY", UPSTREAM),
        ("PG_URL", url),
    ]);
    let mut extra = Vec::new();
    let backends = std::iter::once("mock".to_string())
        .chain(super::DIALECTS.iter().map(|d| format!("up-{d}")));
    for b in backends {
        extra.push(format!("backends.{b}.api_key_env=UPSTREAM_KEY"));
        extra.push(format!("backends.{b}.prices.echo={{input: 1, output: 2}}"));
    }
    let g = super::gateway_for(&mock.base_url(), config, env, &extra);
    start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

/// `SELECT count(*)` of `sql`'s rows.
pub(crate) async fn count(c: &Client, sql: &str) -> i64 {
    c.query_one(&format!("SELECT count(*) FROM ({sql}) t"), &[])
        .await
        .unwrap()
        .get(0)
}
