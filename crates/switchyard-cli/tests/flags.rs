//! `--config` and `--env-file` are shown and taken only by the commands they mean
//! something for, after the command; before it they are still accepted.

mod common;

use common::*;

fn help(args: &[&str]) -> String {
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path()).args(args).arg("--help"));
    assert!(r.ok, "{}", r.err);
    r.out
}

#[test]
fn the_files_flags_are_shown_only_where_they_apply() {
    for command in [
        &["mock"][..],
        &["log", "stats"],
        &["log", "show"],
        &["log", "export"],
    ] {
        let text = help(command);
        assert!(
            !text.contains("--env-file") && !text.contains("--config"),
            "{command:?}: {text}"
        );
    }
    for command in [
        &["ask"][..],
        &["check"],
        &["serve"],
        &["bind"],
        &["backends", "list"],
        &["backends", "show"],
        &["backends", "check"],
        &["backends", "shell"],
    ] {
        let text = help(command);
        assert!(
            text.contains("--env-file") && text.contains("--config"),
            "{command:?}: {text}"
        );
        // Before, every command said what the flag means for `init`.
        assert!(!text.contains("For init"), "{command:?}: {text}");
    }
    assert!(help(&["init"]).contains("The env file the key is written to"));
}

#[test]
fn a_files_flag_before_a_command_that_reads_none_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path()).args(["--config", "run.yaml", "log", "stats", "."]));
    assert!(!r.ok);
    assert!(
        r.err.contains("`switchyard log` reads no run config"),
        "{}",
        r.err
    );
}

#[test]
fn the_config_is_read_given_before_or_after_the_command() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("run.yaml");
    std::fs::write(&config, "model: mock/echo\n").unwrap();
    let config = config.to_str().unwrap();
    for args in [
        vec!["--config", config, "ask", "hi", "--no-stream"],
        vec!["ask", "--config", config, "hi", "--no-stream"],
    ] {
        let home = tempfile::tempdir().unwrap();
        let r = run(switchyard(home.path())
            .args(&args)
            .arg(mock_override(&mock)));
        assert!(r.ok, "{args:?}: {}", r.err);
        assert_eq!(r.out, "hi\n");
    }
}
