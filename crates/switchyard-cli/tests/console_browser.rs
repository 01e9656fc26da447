//! The web console in a real browser: `switchyard serve` with an admin key records calls
//! through its built-in mock (whole, thinking, tools, a failure, priced and unpriced),
//! then `tests/browser/console.mjs` drives headless Chromium over `/console` (the key
//! asked for and given, the table filtered and sorted, a call opened, the spend plot,
//! the budgets, the kept conversations and one turn) and saves a screenshot of each,
//! which this test checks.
//!
//! Needs Chromium (Debian's `chromium`, or `$CHROMIUM`) and Node with `tests/browser`'s
//! pinned `playwright-core` (`npm ci` there; run here when missing). Under CI (`CI`
//! set) a browser that cannot start fails the test; elsewhere the test says why it did
//! not run.

mod common;

use common::switchyard;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ADMIN: &str = "sk-console-admin-test-0123";
const APP: &str = "sk-console-app-test-4567";

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/browser")
}

/// Why the browser cannot run here, if it cannot.
fn missing() -> Option<String> {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    if !Path::new(&chromium).exists() {
        return Some(format!(
            "no Chromium at {chromium} (apt-get install -y chromium, or set CHROMIUM)"
        ));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Some("no `node` on PATH".into());
    }
    let dir = browser_dir();
    if !dir.join("node_modules/playwright-core").exists() {
        let ci = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output();
        match ci {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                return Some(format!(
                    "`npm ci` in {} failed: {}",
                    dir.display(),
                    String::from_utf8_lossy(&o.stderr)
                ))
            }
            Err(e) => return Some(format!("cannot run npm: {e}")),
        }
    }
    None
}

/// One HTTP/1.1 exchange over loopback with `key` as the bearer: status and body.
fn http(addr: &str, method: &str, path: &str, key: &str, body: &str) -> (u16, String) {
    let bearer = format!("Bearer {key}");
    common::serving::exchange_with(addr, method, path, &[("authorization", &bearer)], body)
}

/// PNG width and height from its header, after checking its signature.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

#[test]
fn the_console_opens_filters_and_shows_a_call_in_headless_chromium() {
    if let Some(why) = missing() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the browser test cannot run under CI: {why}"
        );
        eprintln!("console browser test not run: {why}");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("data");
    let config = home.path().join("gateway.yaml");
    std::fs::write(
        &config,
        "keys:\n  - {name: ops, key_env: OPS_KEY, role: admin}\n  - {name: app, key_env: APP_KEY, budget_usd: 5, budget_period: day, unknown_cost: allow}\n",
    )
    .unwrap();
    let mut child = switchyard(home.path())
        .env("OPS_KEY", ADMIN)
        .env("APP_KEY", APP)
        .args(["serve", "--config", config.to_str().unwrap()])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = common::serving::address(&mut child);

    let chat = |model: &str, text: &str| {
        format!(r#"{{"model":"{model}","messages":[{{"role":"user","content":"{text}"}}]}}"#)
    };
    let calls = [
        ("/v1/chat/completions", chat("mock/mock-small", "Plan a three-day trip to Rome.")),
        ("/v1/chat/completions", chat("mock/think", "Why is the sky blue?")),
        ("/v1/chat/completions", chat("mock/tools", "What is the weather in Paris?")),
        ("/v1/chat/completions", chat("mock/echo", "An unpriced model: its cost is unknown.")),
        ("/v1/chat/completions", chat("mock/fault-500", "This one fails.")),
        (
            "/v1/messages",
            r#"{"model":"mock/mock-small","max_tokens":100,"messages":[{"role":"user","content":"Review the plan."}]}"#.to_string(),
        ),
        // Kept by the gateway: a stored response and a thread's first reply.
        (
            "/v1/responses",
            r#"{"model":"mock/mock-small","input":"Summarize the plan."}"#.to_string(),
        ),
        (
            "/v1/messages",
            r#"{"model":"mock/mock-small","max_tokens":100,"thread":{"type":"create"},"messages":[{"role":"user","content":"Start a thread."}]}"#.to_string(),
        ),
    ];
    for (path, body) in &calls {
        let (status, reply) = http(&addr, "POST", path, APP, body);
        assert!(
            status == 200 || body.contains("fault"),
            "{path} {status}: {reply}"
        );
    }
    // The index is written a batch at a time: wait until it lists every call.
    let start = Instant::now();
    loop {
        let (s, body) = http(&addr, "GET", "/console/api/summary", ADMIN, "");
        if s == 200 && body.contains(&format!("\"calls\":{}", calls.len())) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{s}: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }

    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-browser");
    let _ = std::fs::remove_dir_all(&out);
    let started = Instant::now();
    let run = Command::new("node")
        .arg(browser_dir().join("console.mjs"))
        .arg(format!("http://{addr}/console"))
        .arg(&out)
        .arg(ADMIN)
        .output()
        .unwrap();
    let took = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the browser script failed:\n{}\n{stdout}",
        String::from_utf8_lossy(&run.stderr)
    );
    let seen: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(seen["rows"], calls.len(), "{seen}");
    assert_eq!(seen["errorRows"], 1, "{seen}");
    assert_eq!(
        seen["unknownShown"], true,
        "an unpriced call shows `unknown`: {seen}"
    );
    assert!(
        seen["call"].as_str().unwrap().starts_with("Call "),
        "{seen}"
    );
    assert!(seen["bars"].as_u64().unwrap() >= 1, "{seen}");
    assert!(seen["budgets"].as_str().unwrap().contains("app"), "{seen}");
    assert_eq!(seen["conversations"], 2, "{seen}");
    assert!(
        seen["turn"].as_str().unwrap().contains("\"output\""),
        "{seen}"
    );
    assert!(!stdout.contains(APP) && !stdout.contains(ADMIN));
    for name in [
        "console-calls.png",
        "console-call.png",
        "console-spend.png",
        "console-budgets.png",
        "console-conversations.png",
    ] {
        let path = out.join(name);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(png_size(&bytes), (1280, 800), "{}", path.display());
        assert!(bytes.len() > 10_000, "{} is nearly empty", path.display());
        println!("screenshot: {}", path.display());
    }
    println!("browser run: {took:?}");
}
