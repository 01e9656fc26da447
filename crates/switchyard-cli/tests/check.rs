//! `switchyard check` shows every problem — the file's own and every role's — and says "no
//! problems" only when there are none; a key written in the config is never printed back.

mod common;

use std::path::{Path, PathBuf};

use common::{run, switchyard, Run};

/// A key-looking value, as someone might paste it into a config.
const KEY: &str = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123";

fn check(home: &Path, config: &str, extra: &[&str]) -> Run {
    std::fs::write(home.join("run.yaml"), config).unwrap();
    let mut c = switchyard(home);
    c.current_dir(home).args(["check", "--config", "run.yaml"]);
    c.args(extra);
    run(&mut c)
}

fn json(r: &Run) -> serde_json::Value {
    serde_json::from_str(&r.out).unwrap_or_else(|e| panic!("{e}: {}", r.out))
}

/// The table row of `role`.
fn row<'a>(r: &'a Run, role: &str) -> &'a str {
    r.out
        .lines()
        .find(|l| l.starts_with(&format!("{role} ")))
        .unwrap_or_else(|| panic!("no row for {role} in\n{}", r.out))
}

fn assert_no_key(r: &Run) {
    assert!(
        !r.out.contains(KEY) && !r.err.contains(KEY),
        "the key was printed:\n{}{}",
        r.out,
        r.err
    );
}

#[test]
fn file_problems_are_listed_and_every_role_is_still_checked() {
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        "\
colour: blue
llm:
  planner: {{model: mock/echo, extra_body: {{auth: {KEY}}}}}
  fine: mock/echo
  lost: openia/gpt-5
"
    );
    let r = check(home.path(), &config, &[]);
    assert_eq!(r.code, Some(1), "{}{}", r.out, r.err);
    assert!(!r.out.contains("no roles"), "{}", r.out);
    assert!(row(&r, "planner").ends_with("FAILS"), "{}", r.out);
    assert!(row(&r, "fine").ends_with("ok"), "{}", r.out);
    assert!(row(&r, "lost").ends_with("FAILS"), "{}", r.out);
    for expected in [
        "run.yaml:1:1: unknown top-level key `colour`; accepted: model, backends, llm",
        "run.yaml:3:44: the value of `llm.planner.extra_body.auth` looks like an API key",
        "run.yaml:5:3: role `lost`: `openia/gpt-5` is not a model reference",
    ] {
        assert!(
            r.out.contains(expected),
            "missing {expected:?} in\n{}",
            r.out
        );
    }
    assert!(!r.out.contains("no problems"), "{}", r.out);
    assert!(
        r.err
            .contains("error: 3 problems (1 in the file as a whole; 2 of 3 roles cannot work)"),
        "{}",
        r.err
    );
    assert_no_key(&r);

    // The JSON holds the same: the file's problem (no role), each role, no key.
    let r = check(home.path(), &config, &["--json"]);
    assert_eq!(r.code, Some(1));
    assert_no_key(&r);
    let v = json(&r);
    assert_eq!(v["ok"], false);
    assert_eq!(v["config_read"], true);
    let problems = v["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 3, "{problems:?}");
    let colour = problems
        .iter()
        .find(|p| p["message"].as_str().unwrap().contains("colour"))
        .unwrap();
    assert_eq!(colour["role"], serde_json::Value::Null);
    assert_eq!(colour["location"], "run.yaml:1:1");
    let roles = v["roles"].as_array().unwrap();
    let planner = roles.iter().find(|r| r["role"] == "planner").unwrap();
    assert_eq!(planner["ok"], false);
    assert_eq!(planner["settings"]["extra_body"]["auth"], "<redacted>");
}

#[test]
fn a_file_that_cannot_be_read_says_its_roles_are_not_checked() {
    let home = tempfile::tempdir().unwrap();
    let cases: [(&str, Option<&str>, &str); 3] = [
        (
            "a YAML syntax error",
            Some("llm:\n  planner: [mock/echo\n"),
            "run.yaml:3:1: invalid YAML",
        ),
        ("a missing file", None, "run.yaml: cannot read the file"),
        (
            "a file that is not a mapping",
            Some("- mock/echo\n"),
            "run.yaml:1:1: `the file` must be a mapping of sections",
        ),
    ];
    for (case, text, expected) in cases {
        let path = home.path().join("run.yaml");
        let _ = std::fs::remove_file(&path);
        if let Some(text) = text {
            std::fs::write(&path, text).unwrap();
        }
        let mut c = switchyard(home.path());
        c.current_dir(home.path())
            .args(["check", "--config", "run.yaml"]);
        let r = run(&mut c);
        assert_eq!(r.code, Some(1), "{case}: {}{}", r.out, r.err);
        assert!(
            r.out
                .contains("roles not checked: the run config cannot be read"),
            "{case}: {}",
            r.out
        );
        assert!(!r.out.contains("no roles"), "{case}: {}", r.out);
        assert!(r.out.contains(expected), "{case}: {}", r.out);
        assert!(
            r.err.contains(
                "error: 1 problem: the run config cannot be read, so its roles are not checked"
            ),
            "{case}: {}",
            r.err
        );
        let mut c = switchyard(home.path());
        c.current_dir(home.path())
            .args(["check", "--config", "run.yaml", "--json"]);
        let v = json(&run(&mut c));
        assert_eq!(v["config_read"], false, "{case}");
        assert_eq!(v["problems"].as_array().unwrap().len(), 1, "{case}");
    }
}

#[test]
fn a_role_with_an_unknown_key_or_a_written_key_fails_and_is_counted() {
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        "\
llm:
  typo: {{model: mock/echo, temprature: 0.2}}
  keyed: {{model: mock/echo, api_key: {KEY}}}
  fine: mock/echo
"
    );
    let r = check(home.path(), &config, &[]);
    assert_eq!(r.code, Some(1), "{}{}", r.out, r.err);
    assert!(row(&r, "typo").ends_with("FAILS"), "{}", r.out);
    assert!(row(&r, "keyed").ends_with("FAILS"), "{}", r.out);
    assert!(row(&r, "fine").ends_with("ok"), "{}", r.out);
    for expected in [
        "run.yaml:2:28: unknown role key `temprature` (did you mean `temperature`?); accepted: model,",
        "run.yaml:3:29: `api_key` would put a key in a configuration file",
    ] {
        assert!(r.out.contains(expected), "missing {expected:?} in\n{}", r.out);
    }
    assert!(
        r.err
            .contains("error: 2 problems (2 of 3 roles cannot work)"),
        "{}",
        r.err
    );
    assert_no_key(&r);
    let v = json(&check(home.path(), &config, &["--json"]));
    for p in v["problems"].as_array().unwrap() {
        assert!(p["role"] == "typo" || p["role"] == "keyed", "{p}");
    }
}

#[test]
fn the_budget_is_checked_as_ask_reads_it() {
    let home = tempfile::tempdir().unwrap();
    let config = "\
llm:
  planner: mock/mock-small
budget: {max_usd: -1, max_calls: x, max_tokns: 3}
";
    let r = check(home.path(), config, &[]);
    assert_eq!(r.code, Some(1), "{}{}", r.out, r.err);
    assert!(row(&r, "planner").ends_with("ok"), "{}", r.out);
    for expected in [
        "run.yaml:3:10: `budget.max_usd` must be a number of dollars, 0 or more (e.g. 2.50), not -1",
        "run.yaml:3:23: `budget.max_calls` must be a whole number, 0 or more, not \"x\"",
        "run.yaml:3:37: `budget.max_tokns` is not a budget field (did you mean `max_tokens`?); accepted: max_usd, max_calls, max_tokens, exclude_roles, unknown_cost",
    ] {
        assert!(r.out.contains(expected), "missing {expected:?} in\n{}", r.out);
    }
    assert!(!r.out.contains("no problems"), "{}", r.out);
    assert!(
        r.err
            .contains("error: 3 problems (3 in the file as a whole; 0 of 1 role cannot work)"),
        "{}",
        r.err
    );

    // `ask` refuses the same file for the same reasons, before calling anyone.
    let mut c = switchyard(home.path());
    c.current_dir(home.path())
        .args(["--config", "run.yaml", "ask", "mock/echo", "hi"]);
    let ask = run(&mut c);
    assert_eq!(ask.code, Some(1), "{}{}", ask.out, ask.err);
    assert!(
        ask.err.contains("`budget.max_tokns` is not a budget field"),
        "{}",
        ask.err
    );

    // A sound budget passes.
    let r = check(
        home.path(),
        "llm:\n  planner: mock/mock-small\nbudget: {max_usd: 1.5, max_calls: 10, max_tokens: 5000, exclude_roles: [judge]}\n",
        &[],
    );
    assert_eq!(r.code, Some(0), "{}{}", r.out, r.err);
    assert!(
        r.out.contains("no problems: every role can work"),
        "{}",
        r.out
    );
}

#[test]
fn json_names_each_setting_as_it_was_written() {
    let home = tempfile::tempdir().unwrap();
    let r = check(
        home.path(),
        "\
llm:
  planner: {model: mock/think, reasoning_effort: medium, max_completion_tokens: 100, timeout_seconds: 30}
  agent: {model: codex/gpt-5, effort: high}
",
        &["--json"],
    );
    let v = json(&r);
    let role = |name: &str| {
        v["roles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["role"] == name)
            .unwrap()["settings"]
            .clone()
    };
    assert_eq!(
        role("planner"),
        serde_json::json!({"reasoning_effort": "medium", "max_completion_tokens": 100, "timeout_seconds": 30}),
        "{}",
        r.out
    );
    assert_eq!(role("agent"), serde_json::json!({"effort": "high"}));
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_example_passes_check_from_the_repository_root() {
    let home = tempfile::tempdir().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(repo_root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 4, "{names:?}");
    for name in names {
        let mut c = switchyard(home.path());
        // As from a fresh clone: relative paths in the examples are from the root.
        c.current_dir(repo_root())
            .args(["check", "--config", &format!("examples/{name}")])
            // hosted.yaml names hosted backends; the check needs their variables set.
            .env("DEEPSEEK_API_KEY", "test-deepseek")
            .env("ANTHROPIC_API_KEY", "test-anthropic")
            .env("OPENAI_API_KEY", "test-openai");
        let r = run(&mut c);
        assert_eq!(r.code, Some(0), "{name}:\n{}{}", r.out, r.err);
        assert!(
            r.out.contains("no problems: every role can work"),
            "{name}:\n{}",
            r.out
        );
    }
}

#[test]
fn the_replay_example_replays_its_shipped_run_from_the_repository_root() {
    let home = tempfile::tempdir().unwrap();
    let run_dir = repo_root().join("examples/runs/mock_campaign");
    let files = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = files(&run_dir);
    for (role, prompt) in [
        ("planner", "Plan a three-day trip to Rome."),
        (
            "reviewer",
            "Review this plan: the Colosseum, the Vatican, then Trastevere.",
        ),
    ] {
        let mut c = switchyard(home.path());
        c.current_dir(repo_root()).args([
            "--config",
            "examples/replay.yaml",
            "ask",
            "--role",
            role,
            prompt,
            "--replay",
            "examples/runs/mock_campaign",
            "--no-stream",
        ]);
        let r = run(&mut c);
        assert_eq!(r.code, Some(0), "{role}: {}{}", r.out, r.err);
        // The mock echoed the prompt when the run was recorded.
        assert_eq!(r.out.trim(), prompt, "{role}");
    }
    assert_eq!(
        files(&run_dir),
        before,
        "replaying writes nothing beside the run"
    );
}

#[test]
fn a_role_naming_a_route_shows_each_member_and_the_members_problems() {
    let home = tempfile::tempdir().unwrap();
    let config = "backends:\n  a: {from: mock}\n  b: {from: mock, apis: [messages]}\n\
                  routes:\n  smart: {try: [a/echo, b/echo], on: [quota, overloaded]}\n\
                  llm:\n  planner: smart\n  coder: {model: smart, dialect: chat}\n";
    let r = check(home.path(), config, &[]);
    assert_eq!(r.code, Some(1), "{}", r.out);
    assert!(row(&r, "planner").contains("route of 2"), "{}", r.out);
    assert!(r.out.contains("  member 1  a/echo"), "{}", r.out);
    assert!(r.out.contains("  member 2  b/echo"), "{}", r.out);
    assert!(
        r.out
            .contains("role `coder`: backend `b` does not serve the `chat` dialect"),
        "{}",
        r.out
    );
    let j = json(&check(home.path(), config, &["--json"]));
    let planner = &j["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["role"] == "planner")
        .unwrap();
    assert_eq!(planner["route"], "smart");
    assert_eq!(planner["members"][1]["dialect"], "messages");
    // An unknown kind in `on:`, located.
    let r = check(
        home.path(),
        &config.replace("overloaded]", "overload]"),
        &[],
    );
    assert!(r.out.contains("run.yaml:5:"), "{}", r.out);
    assert!(
        r.out.contains(
            "unknown failure kind `overload` in `routes.smart.on` (did you mean `overloaded`?)"
        ),
        "{}",
        r.out
    );
}

/// The one config kept on the listener's old `_secs` names: they still read, and `check`
/// names each as deprecated without failing. An old name beside its new one stays an
/// error of the gateway's config (config.rs's tests).
#[test]
fn the_listeners_old_secs_names_are_named_deprecated_without_failing() {
    let home = tempfile::tempdir().unwrap();
    let config = "\
llm:
  planner: mock/echo
listen:
  address: 127.0.0.1:8080
  drain_timeout_secs: 10
  header_timeout_secs: 5
  body_timeout_seconds: 30
";
    let r = check(home.path(), config, &[]);
    assert_eq!(r.code, Some(0), "{}{}", r.out, r.err);
    assert!(
        r.out.contains("no problems: every role can work"),
        "{}",
        r.out
    );
    let notes: Vec<&str> = r
        .out
        .lines()
        .filter(|l| l.starts_with("deprecated: "))
        .collect();
    assert_eq!(
        notes,
        [
            "deprecated: listen.drain_timeout_secs: use listen.drain_timeout_seconds",
            "deprecated: listen.header_timeout_secs: use listen.header_timeout_seconds",
        ],
        "{}",
        r.out
    );
    // The JSON holds the same notes.
    let r = check(home.path(), config, &["--json"]);
    assert_eq!(r.code, Some(0), "{}{}", r.out, r.err);
    let v = json(&r);
    assert_eq!(v["ok"], true);
    assert_eq!(
        v["deprecated"],
        serde_json::json!([
            "listen.drain_timeout_secs: use listen.drain_timeout_seconds",
            "listen.header_timeout_secs: use listen.header_timeout_seconds",
        ])
    );
    // Today's names alone: no note, and no `deprecated` field in the JSON.
    let current = config.replace("_secs:", "_seconds:");
    let r = check(home.path(), &current, &[]);
    assert_eq!(r.code, Some(0), "{}{}", r.out, r.err);
    assert!(!r.out.contains("deprecated"), "{}", r.out);
    let v = json(&check(home.path(), &current, &["--json"]));
    assert!(v.get("deprecated").is_none(), "{v}");
}
