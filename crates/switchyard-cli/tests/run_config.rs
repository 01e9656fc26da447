//! `switchyard check`, `switchyard init` and `--env-file`, run as the built binary in a
//! clean environment.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A command with an empty environment except PATH and HOME in `home`.
fn switchyard(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .current_dir(home);
    c
}

fn run(c: &mut Command) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = c.output().expect("the binary runs");
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

const GOOD: &str = "\
model: mock/echo
llm:
  planner: {model: mock/mock-small, max_tokens: 100}
  reviewer: {temperature: 0.2}
  distiller: {backend: openai_compatible, model: m1, base_url: http://127.0.0.1:9/v1, api_key_env: DISTILL_KEY}
";

#[test]
fn check_a_good_config_prints_every_role_and_exits_zero() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("run.yaml"), GOOD).unwrap();
    let (code, out, err) = run(switchyard(home.path())
        .args(["check", "--config", "run.yaml"])
        .env("DISTILL_KEY", "a-test-key-value"));
    assert_eq!(code, 0, "{out}{err}");
    let header = out.lines().find(|l| l.starts_with("ROLE")).unwrap();
    for col in [
        "REFERENCE",
        "BACKEND",
        "DIALECT",
        "SERVED",
        "KEY",
        "PRICE",
        "CONTEXT",
    ] {
        assert!(header.contains(col), "{header}");
    }
    let line = |role: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{role} ")))
            .unwrap_or_else(|| panic!("no {role} in\n{out}"))
            .to_string()
    };
    let planner = line("planner");
    for cell in [
        "mock/mock-small",
        "role entry",
        "mock",
        "chat",
        "yes",
        "known",
        "32768",
        "ok",
    ] {
        assert!(planner.contains(cell), "{planner}");
    }
    assert!(line("reviewer").contains("top-level model"), "{out}");
    assert!(line("reviewer").contains("unknown"), "{out}");
    let distiller = line("distiller");
    assert!(distiller.contains("role:distiller/m1"), "{distiller}");
    assert!(distiller.contains("DISTILL_KEY (set)"), "{distiller}");
    assert!(out.contains("no problems: every role can work"), "{out}");
    assert!(!out.contains("a-test-key-value"));
}

#[test]
fn check_a_bad_config_lists_every_problem_and_exits_non_zero() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("run.yaml"),
        "\
budget: {max_usd: 20}
llm:
  planner: openia/gpt-5
  proposer: anthropic/sonnet
  reviewer: {model: anthropic/opus, dialect: chat, thinking_budget: 5}
  cheap: mock/echo
  nomodel: {max_tokens: 5}
",
    )
    .unwrap();
    let (code, out, err) = run(switchyard(home.path()).args(["check", "--config", "run.yaml"]));
    assert_eq!(code, 1, "{out}{err}");
    for expected in [
        "run.yaml:3:3: role `planner`: `openia/gpt-5` is not a model reference: no backend is called `openia` (did you mean `openai`?)",
        "run.yaml:4:3: role `proposer`: backend `anthropic` needs a key: set the environment variable ANTHROPIC_API_KEY",
        "role `reviewer`: backend `anthropic` (kind http, dialect chat) does not take `thinking_budget`",
        "role `reviewer`: backend `anthropic` does not serve the `chat` dialect (it serves: messages)",
        "role `cheap`: the run has a dollar budget (budget.max_usd: 20) but the price of `mock/echo` is unknown",
        "role `nomodel` has no model",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in\n{out}");
    }
    assert!(
        err.contains("error: 7 problems (5 of 5 roles cannot work)"),
        "{err}"
    );

    // The same with --json, for machines.
    let (code, out, _) =
        run(switchyard(home.path()).args(["check", "--config", "run.yaml", "--json"]));
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["problems"].as_array().unwrap().len(), 7);
    let reviewer = v["roles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["role"] == "reviewer")
        .unwrap();
    assert_eq!(reviewer["served"], false);
    assert_eq!(reviewer["dialect"], "chat");
    assert_eq!(reviewer["key_variable"], "ANTHROPIC_API_KEY");
    assert_eq!(reviewer["key"], "unset");

    // An override on the command line fixes a role.
    let (_, out, _) = run(switchyard(home.path()).args([
        "check",
        "--config",
        "run.yaml",
        "llm.planner=mock/mock-small",
    ]));
    assert!(!out.contains("role `planner`"), "{out}");
}

#[test]
fn check_without_a_config_says_how_to_give_one() {
    let home = tempfile::tempdir().unwrap();
    let (code, _, err) = run(switchyard(home.path()).args(["check"]));
    assert_eq!(code, 1);
    assert!(
        err.contains("`check` needs a run config: `switchyard check --config run.yaml"),
        "{err}"
    );
}

#[test]
fn ask_with_a_config_runs_the_check_first() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("run.yaml"),
        "llm:\n  planner: openai/gpt-5\n",
    )
    .unwrap();
    let (code, _, err) =
        run(switchyard(home.path()).args(["ask", "--config", "run.yaml", "mock/echo", "hi"]));
    assert_eq!(code, 1);
    assert!(
        err.contains("role `planner`: backend `openai` needs a key"),
        "{err}"
    );
    assert!(
        err.contains("`switchyard check --config run.yaml` shows every role"),
        "{err}"
    );
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn init_stdin(home: &Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = switchyard(home)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn init_writes_the_key_0600_replaces_it_keeps_other_lines_and_never_prints_it() {
    let home = tempfile::tempdir().unwrap();
    let env_file = home.path().join(".env.switchyard");
    let key1 = "sk-first-key-0123456789abcdef";
    let (code, out, err) = init_stdin(
        home.path(),
        &[
            "init",
            "--backend",
            "openai",
            "--api-key-stdin",
            "--env-file",
            ".env.switchyard",
        ],
        &format!("{key1}\n"),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "OPENAI_API_KEY\n");
    assert!(!out.contains(key1) && !err.contains(key1));
    assert!(err.contains("a new file, mode 0600"), "{err}");
    #[cfg(unix)]
    assert_eq!(mode(&env_file), 0o600);
    assert_eq!(
        std::fs::read_to_string(&env_file).unwrap(),
        format!("OPENAI_API_KEY={key1}\n")
    );

    // Other lines are kept; the variable is replaced where it is.
    std::fs::write(
        &env_file,
        format!("# mine\nFOO=bar\nexport OPENAI_API_KEY={key1}\nBAZ='q x'\n"),
    )
    .unwrap();
    let key2 = "sk-second-key-0123456789abcdef";
    let (code, out, err) = run(switchyard(home.path()).args([
        "init",
        "--backend",
        "openai",
        "--api-key",
        key2,
        "--env-file",
        ".env.switchyard",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "OPENAI_API_KEY\n");
    assert!(!err.contains(key2), "{err}");
    assert!(err.contains("its line replaced"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&env_file).unwrap(),
        format!("# mine\nFOO=bar\nOPENAI_API_KEY={key2}\nBAZ='q x'\n")
    );
    #[cfg(unix)]
    assert_eq!(mode(&env_file), 0o600);

    // Another backend's variable is added at the end.
    let (code, out, _) = run(switchyard(home.path()).args([
        "init",
        "--backend",
        "deepseek",
        "--api-key",
        "ds-key",
        "--env-file",
        ".env.switchyard",
    ]));
    assert_eq!(code, 0);
    assert_eq!(out, "DEEPSEEK_API_KEY\n");
    assert!(std::fs::read_to_string(&env_file)
        .unwrap()
        .ends_with("BAZ='q x'\nDEEPSEEK_API_KEY=ds-key\n"));
}

#[test]
fn init_refuses_an_unknown_backend_and_a_missing_key() {
    let home = tempfile::tempdir().unwrap();
    let (code, _, err) = run(switchyard(home.path()).args([
        "init",
        "--backend",
        "opena",
        "--api-key",
        "k",
        "--env-file",
        "e",
    ]));
    assert_eq!(code, 1);
    assert!(
        err.contains("no backend is called `opena` (did you mean `openai`?)"),
        "{err}"
    );
    let (code, _, err) =
        run(switchyard(home.path()).args(["init", "--backend", "openai", "--env-file", "e"]));
    assert_eq!(code, 1);
    assert!(
        err.contains("give the key of backend `openai` with --api-key-stdin"),
        "{err}"
    );
    assert!(!home.path().join("e").exists());
    let (code, out, _) =
        run(switchyard(home.path()).args(["init", "--backend", "claude-code", "--env-file", "e"]));
    assert_eq!(code, 0);
    assert!(out.contains("needs no key"), "{out}");
}

#[test]
fn init_for_google_adc_checks_credentials_and_project_and_writes_no_key() {
    let home = tempfile::tempdir().unwrap();
    let (code, _, err) = run(switchyard(home.path()).args([
        "init",
        "--backend",
        "vertex",
        "--env-file",
        ".env.switchyard",
    ]));
    assert_eq!(code, 1);
    assert!(
        err.contains("run `gcloud auth application-default login`"),
        "{err}"
    );
    assert!(err.contains("GOOGLE_CLOUD_PROJECT is not set"), "{err}");
    // The location has a default (`global`, as google-genai's): not asked for.
    assert!(!err.contains("GOOGLE_CLOUD_LOCATION"), "{err}");
    assert!(!home.path().join(".env.switchyard").exists());

    // gcloud's ADC file, and the project and location from the env file.
    let gcloud = home.path().join(".config/gcloud");
    std::fs::create_dir_all(&gcloud).unwrap();
    std::fs::write(gcloud.join("application_default_credentials.json"), "{}").unwrap();
    std::fs::write(
        home.path().join(".env.switchyard"),
        "GOOGLE_CLOUD_PROJECT=my-proj\nGOOGLE_CLOUD_LOCATION=global\n",
    )
    .unwrap();
    let (code, out, err) = run(switchyard(home.path()).args([
        "init",
        "--backend",
        "vertex",
        "--env-file",
        ".env.switchyard",
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("application_default_credentials.json"),
        "{out}"
    );
    assert!(out.contains("project: my-proj"), "{out}");
    assert!(
        out.contains("location: global (GOOGLE_CLOUD_LOCATION)"),
        "{out}"
    );
    assert!(out.contains("ready"), "{out}");
}

#[test]
fn env_file_supplies_keys_and_the_default_model() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("run.yaml"),
        "llm:\n  planner: {max_tokens: 5}\n  proposer: anthropic/sonnet\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join("keys.env"),
        "# keys\nexport ANTHROPIC_API_KEY=\"sk-ant-from-the-file-0123456789\"\nSWITCHYARD_MODEL=mock/echo # default\n",
    )
    .unwrap();
    let (code, out, err) = run(switchyard(home.path()).args(["check", "--config", "run.yaml"]));
    assert_eq!(code, 1, "{out}{err}");
    let (code, out, err) = run(switchyard(home.path()).args([
        "--env-file",
        "keys.env",
        "check",
        "--config",
        "run.yaml",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let planner = out.lines().find(|l| l.starts_with("planner ")).unwrap();
    assert!(
        planner.contains("mock/echo") && planner.contains("SWITCHYARD_MODEL"),
        "{planner}"
    );
    assert!(out.contains("ANTHROPIC_API_KEY (set)"), "{out}");
    assert!(!out.contains("from-the-file"));
    // The file wins over the process environment.
    let (_, out, _) = run(switchyard(home.path())
        .args(["--env-file", "keys.env", "check", "--config", "run.yaml"])
        .env("SWITCHYARD_MODEL", "mock/think"));
    assert!(
        out.lines()
            .any(|l| l.starts_with("planner ") && l.contains("mock/echo")),
        "{out}"
    );
    // A malformed env file is refused with its line.
    std::fs::write(home.path().join("bad.env"), "OK=1\nnot a line\n").unwrap();
    let (code, _, err) =
        run(switchyard(home.path()).args(["--env-file", "bad.env", "backends", "list"]));
    assert_eq!(code, 1);
    assert!(err.contains("bad.env:2: there is no `=`"), "{err}");
}
