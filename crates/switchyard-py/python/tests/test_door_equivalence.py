"""Door equivalence, the Python doors: the role of the Rust door test
(`crates/switchyard-cli/tests/doors.rs`, its config read from `tests/common/doors.rs` so
the two cannot drift) called through `Run.open` (the library's `Run`), `switchyard.llm(
config=…, role=…)` and `switchyard ask --role` (the CLI's own main, which doors.rs proves
equal to a Rust `Run`) sends the same upstream body and writes the same record apart from
times and ids; a setting a run config refuses is refused by `llm(**settings)` with the same
message. Every call goes to a mock of its own on 127.0.0.1."""

import json
import re
from pathlib import Path

import pytest

import switchyard
from switchyard import _switchyard

DOORS_RS = Path(__file__).resolve().parents[3] / "switchyard-cli" / "tests" / "common" / "doors.rs"


def rust_config() -> str:
    """The run config of the Rust door tests (`CONFIG` in tests/common/doors.rs)."""
    source = DOORS_RS.read_text()
    found = re.search(r'pub\(crate\) const CONFIG: &str = "\\\n(.*?)";\n', source, re.S)
    assert found, f"CONFIG in {DOORS_RS}"
    return found.group(1).replace('\\"', '"')


@pytest.fixture
def own_mock():
    mock = _switchyard.Mock()
    yield mock
    mock.stop()


def strip(value):
    """`value` without what differs between two calls made alike (as doors.rs `strip`):
    times, durations and the provider's reply ids; the raw reply read as JSON."""
    if isinstance(value, dict):
        out = {}
        for key, v in value.items():
            if key in ("timings", "started_at", "ended_at", "duration_ms", "first_byte_ms", "id"):
                continue
            if key == "data" and isinstance(v, str):
                try:
                    v = json.loads(v)
                except ValueError:
                    pass
            out[key] = strip(v)
        return out
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def comparable(run_dir: Path):
    (record,) = switchyard.log.open(run_dir).records()
    return strip(dict(record))


def test_a_role_called_through_run_open_llm_and_ask_role_is_the_same_call(tmp_path, own_mock, capfd):
    config = tmp_path / "run.yaml"
    config.write_text(rust_config())
    base = f"backends.mock.base_url={own_mock.base_url}"
    logs = {door: tmp_path / door for door in ("by-run", "by-llm", "by-ask")}

    with switchyard.Run.open(config, overrides=[base, f"log={logs['by-run']}"]) as run:
        run.llm("planner").complete("the same question")
    handle = switchyard.llm(config=config, role="planner", overrides=[base, f"log={logs['by-llm']}"])
    assert handle.role == "planner" and handle.label == "pair"
    handle.complete("the same question")
    del handle
    argv = ["switchyard", "--config", str(config), "ask", "--role", "planner", "the same question", "--no-stream"]
    assert _switchyard.cli_main(argv + [f"log={logs['by-ask']}", base]) == 0, capfd.readouterr().err

    requests = own_mock.requests()
    assert len(requests) == 3, "each door called the provider once"
    assert len({r["path"] for r in requests}) == 1
    by_run, by_llm, by_ask = (r["json"] for r in requests)
    assert by_run == by_llm == by_ask, "the same upstream body"
    assert by_run["model"] == "mock-small", by_run  # the route's first member
    assert (by_run["temperature"], by_run["stop"]) == (0.25, ["END"]), by_run
    # The role's max_tokens, under the name the mock's chat dialect sends it.
    assert 50 in (by_run.get("max_tokens"), by_run.get("max_completion_tokens")), by_run

    run_record = comparable(logs["by-run"])
    assert run_record == comparable(logs["by-llm"]), "the same record apart from times and ids"
    assert run_record == comparable(logs["by-ask"])
    assert (run_record["role"], run_record["route"]) == ("planner", "pair")
    assert isinstance(run_record["cost_usd"], float) and isinstance(run_record["cache_key"], str)


def test_the_same_model_and_settings_given_to_llm_send_the_roles_body(tmp_path, own_mock):
    # A call made by no role, given the role's model and settings, sends what the role does.
    config = tmp_path / "run.yaml"
    config.write_text(rust_config())
    base = f"backends.mock.base_url={own_mock.base_url}"
    with switchyard.Run.open(config, overrides=[base, f"log={tmp_path / 'by-run'}"]) as run:
        run.llm("planner").complete("q")
    by_llm = [base, f"log={tmp_path / 'by-llm'}"]
    switchyard.llm("pair", config=config, overrides=by_llm, temperature=0.25, max_tokens=50, stop=["END"]).complete("q")
    by_role, by_settings = (r["json"] for r in own_mock.requests())
    assert by_role == by_settings


def test_a_setting_a_run_config_refuses_is_refused_by_llm_with_the_same_message(tmp_path, own_mock):
    base = f"backends.mock.base_url={own_mock.base_url}"
    # `thinking_budget` is a setting of the Gemini dialect; the mock role is called in chat.
    refusing = tmp_path / "refusing.yaml"
    refusing.write_text("llm:\n  planner: {model: mock/echo, thinking_budget: 100}\n")
    with pytest.raises(switchyard.ConfigError) as by_config:
        switchyard.Run.open(refusing, overrides=[base])
    (problem,) = by_config.value.problems
    assert "does not take `thinking_budget`" in problem["message"]

    plain = tmp_path / "plain.yaml"
    plain.write_text("llm:\n  planner: {model: mock/echo}\n")
    with pytest.raises(switchyard.ConfigError) as by_keyword:
        switchyard.llm(config=plain, role="planner", overrides=[base], thinking_budget=100)
    # The same words; only where the setting was written differs (the settings given).
    assert f"\n  the settings given: {problem['message']}" in str(by_keyword.value)
    assert own_mock.received == 0, "nothing was sent by either door"
