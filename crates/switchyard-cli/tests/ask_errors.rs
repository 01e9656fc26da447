//! `switchyard ask` against the mock: how failures read on the terminal.

use std::process::Command;
use switchyard_mock::{MockConfig, MockServer};

fn ask(mock: &MockServer, args: &[&str]) -> (bool, String, String) {
    let home = tempfile::tempdir().expect("a temporary home");
    let output = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("MOCK_BASE_URL", mock.base_url())
        .arg("ask")
        .args(args)
        .output()
        .expect("the binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn mock() -> MockServer {
    MockServer::start_in_thread("127.0.0.1:0".parse().expect("addr"), MockConfig::default())
        .expect("the mock starts")
}

#[test]
fn a_refused_key_and_an_empty_account_say_so() {
    let mock = mock();
    let (ok, out, err) = ask(&mock, &["mock/fault-401", "hi", "--no-stream"]);
    assert!(!ok);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.starts_with("error: the key was refused: mock answered HTTP 401"),
        "{err}"
    );
    assert!(err.contains("[request id req_mock_"), "{err}");

    let (ok, _, err) = ask(&mock, &["mock/quota", "hi", "--stream"]);
    assert!(!ok);
    assert!(
        err.starts_with(
            "error: provider quota exhausted (top up or raise the limit, then run again)"
        ),
        "{err}"
    );
    assert_eq!(mock.requests().len(), 2, "nothing was retried");
}

#[test]
fn a_stream_cut_after_output_keeps_the_text_and_says_it_was_not_resent() {
    let mock = mock();
    let (ok, out, err) = ask(&mock, &["mock/cut-stream+lorem-30", "hi", "--stream"]);
    assert!(!ok);
    let words = out.split_whitespace().count();
    assert!(words > 0 && words < 30, "{out}");
    assert!(
        err.starts_with("error: mock sent a malformed reply: stream:")
            && err.contains("characters of output, shown above; it was not sent again)"),
        "{err}"
    );
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn a_model_id_that_walks_out_of_its_segment_is_refused_before_any_request() {
    let mock = mock();
    for (reference, why) in [
        ("mock/mock-small+x/../mock-large", "has a `..` segment"),
        ("mock/../../v1/fine_tuning/jobs#", "has a `..` segment"),
        ("mock/echo?alt=json", "holds `?` at byte 4"),
    ] {
        let (ok, out, err) = ask(&mock, &[reference, "hi", "--no-stream"]);
        assert!(!ok, "{reference}");
        assert!(out.is_empty(), "{out}");
        assert!(err.starts_with("error: `mock/…`: model id `"), "{err}");
        assert!(err.contains(why), "{err}");
        assert!(err.contains("a model id is 1 to 512 bytes"), "{err}");
    }
    assert!(mock.requests().is_empty(), "nothing was sent");
}
