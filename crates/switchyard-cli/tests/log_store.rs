//! `switchyard log stats|show|export --store postgres` over the PostgreSQL store two
//! `switchyard serve` replicas share, as an operator runs them (the built binary, a
//! config naming the URL's variable, a data directory each): the database's stats are
//! the sum of the calls made, equal to the replicas' own logs added up; a URL with a
//! password on the command line is refused. Against the server `scripts/pg start`
//! brings up (`scripts/test` does); failing under CI without it.

mod common;

use common::serving::{chat, exchange, serve, stop};
use common::{run, switchyard};
use serde_json::Value;
use std::ffi::OsStr;

fn stats(home: &std::path::Path, args: &[&str], url: &str) -> Value {
    let r = run(switchyard(home)
        .args(["log", "stats", "--json"])
        .args(args)
        .env("SWITCHYARD_PG_URL", url));
    assert!(r.ok, "log stats {args:?}: {}", r.err);
    serde_json::from_str(&r.out).unwrap()
}

#[test]
fn log_over_the_shared_store_is_the_sum_of_the_replicas_calls() {
    let Ok(admin_url) = std::env::var("SWITCHYARD_TEST_PG_URL") else {
        let how = "start one with `eval \"$(scripts/pg start)\"` (stop it with `scripts/pg stop`)";
        assert!(
            std::env::var_os("CI").is_none(),
            "SWITCHYARD_TEST_PG_URL is not set under CI: {how}"
        );
        eprintln!("skipped: no PostgreSQL for this test; {how}");
        return;
    };
    let db = "sy_cli_log_store";
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let admin = switchyard_gateway::pg::connect(&admin_url).await.unwrap();
        for sql in [
            format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
            format!("CREATE DATABASE {db}"),
        ] {
            admin.batch_execute(&sql).await.unwrap();
        }
    });
    let base = admin_url.split('?').next().unwrap();
    // The server trusts loopback, so a password here is ignored by it: what matters is
    // that the gateway never shows it.
    let url = format!("{}/{db}", base.rsplit_once('/').unwrap().0).replacen(
        "postgres@",
        "postgres:hunter2@",
        1,
    );
    assert!(url.contains("hunter2"), "{url}");

    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("gateway.yaml");
    std::fs::write(
        &config,
        "store:\n  postgres: {url_env: SWITCHYARD_PG_URL}\n",
    )
    .unwrap();
    let (d1, d2) = (home.path().join("replica-1"), home.path().join("replica-2"));
    let env = [("SWITCHYARD_PG_URL", url.as_str())];
    let start = |dir: &std::path::Path, store: [&OsStr; 2]| {
        let args = [&store[..], &[OsStr::new("--data-dir"), dir.as_os_str()]].concat();
        serve(home.path(), &env, &args)
    };
    // One replica names the store in its config, the other on its command line.
    let (one, a1) = start(&d1, [OsStr::new("--config"), config.as_os_str()]);
    let (two, a2) = start(&d2, [OsStr::new("--store"), OsStr::new("postgres")]);
    for (addr, n) in [(&a1, 7), (&a2, 5)] {
        for i in 0..n {
            let (s, body) = exchange(
                addr,
                "POST",
                "/v1/chat/completions",
                &chat(&format!("c{i}")),
            );
            assert_eq!(s, 200, "{body}");
        }
        let (_, health) = exchange(addr, "GET", "/healthz", "");
        let health: Value = serde_json::from_str(&health).unwrap();
        assert_eq!(health["postgres"]["reachable"], true, "{health}");
        assert!(
            health["postgres"]["url"]
                .as_str()
                .unwrap()
                .contains(":***@"),
            "{health}"
        );
        assert!(!health.to_string().contains("hunter2"), "{health}");
    }
    for child in [one, two] {
        let (code, err) = stop(child);
        assert_eq!(code, Some(0), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    let shared = stats(home.path(), &["--store", "postgres"], &url);
    assert_eq!(shared["total"]["calls"], 12, "{shared}");
    let mine =
        [d1.as_path(), d2.as_path()].map(|d| stats(home.path(), &[d.to_str().unwrap()], &url));
    for field in ["calls", "input_tokens", "output_tokens"] {
        let sum: u64 = mine
            .iter()
            .map(|s| s["total"][field].as_u64().unwrap())
            .sum();
        assert_eq!(shared["total"][field].as_u64(), Some(sum), "{field}");
    }
    let sum: f64 = mine
        .iter()
        .map(|s| s["total"]["cost_usd"].as_f64().unwrap_or(0.0))
        .sum();
    let cost = shared["total"]["cost_usd"].as_f64().unwrap_or(0.0);
    assert!((cost - sum).abs() < 1e-12, "{cost} vs {sum}");

    // Export names each call by its id; show reads one back.
    let r = run(switchyard(home.path())
        .args(["log", "export", "--store", "postgres", "--format", "csv"])
        .env("SWITCHYARD_PG_URL", &url));
    assert!(r.ok, "{}", r.err);
    let lines: Vec<&str> = r.out.lines().collect();
    assert_eq!(lines.len(), 13, "{}", r.out);
    assert!(lines[0].starts_with("call_id,number,"), "{}", lines[0]);
    let id = lines[1].split(',').next().unwrap();
    let r = run(switchyard(home.path())
        .args(["log", "show", "--store", "postgres", id])
        .env("SWITCHYARD_PG_URL", &url));
    assert!(r.ok, "{}", r.err);
    assert!(r.out.contains("mock/echo"), "{}", r.out);
    // A bare number two replicas share is ambiguous, and said so.
    let r = run(switchyard(home.path())
        .args(["log", "show", "--store", "postgres", "1"])
        .env("SWITCHYARD_PG_URL", &url));
    assert!(
        !r.ok && r.err.contains("several replicas have a call 1"),
        "{}",
        r.err
    );
}

#[test]
fn a_password_on_the_command_line_is_refused_and_never_printed() {
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path()).args([
        "log",
        "stats",
        "--store",
        "postgres://u:hunter2@127.0.0.1:1/db",
    ]));
    assert!(!r.ok);
    assert!(r.err.contains("--store postgres"), "{}", r.err);
    assert!(!r.err.contains("hunter2") && !r.out.contains("hunter2"));
    let r = run(switchyard(home.path()).args(["log", "stats", "--store", "postgres"]));
    assert!(
        !r.ok && r.err.contains("SWITCHYARD_PG_URL is not set"),
        "{}",
        r.err
    );
    let r = run(switchyard(home.path()).args(["log", "stats"]));
    assert!(!r.ok && r.err.contains("--store postgres"), "{}", r.err);

    // `serve --store` refuses the same URL, and a shared store without a data directory.
    let r = run(switchyard(home.path()).args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--store",
        "postgres://u:hunter2@127.0.0.1:1/db",
    ]));
    assert!(!r.ok && r.err.contains("--store postgres"), "{}", r.err);
    assert!(!r.err.contains("hunter2") && !r.out.contains("hunter2"));
    let r = run(switchyard(home.path()).args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--store",
        "postgres://u@127.0.0.1:1/db",
    ]));
    assert!(!r.ok && r.err.contains("--data-dir DIR"), "{}", r.err);
}
