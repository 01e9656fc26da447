"""A recorded run read back from Python (`switchyard.log.open`): its records, one call,
its raw bytes, its stats — the same as `switchyard log export|show|stats` give."""

import json
import subprocess
import sys

import pytest

import switchyard


def cli(*args):
    out = subprocess.run(
        [sys.executable, "-m", "switchyard._cli", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


@pytest.fixture
def recorded(tmp_path):
    """A run of two roles: three calls, one streamed, one failed."""
    log = tmp_path / "run"
    config = tmp_path / "run.yaml"
    config.write_text(
        f"log: {log}\n"
        "llm:\n"
        "  planner: mock/small\n"
        "  reviewer: mock/fault-400\n"
    )
    with switchyard.Run.open(config) as run:
        planner = run.llm("planner")
        replies = [planner.complete("plan the work")]
        stream = planner.stream("stream the plan")
        list(stream)
        replies.append(stream.reply)
        with pytest.raises(switchyard.BadRequest):
            run.llm("reviewer").complete("review it")
    return log, replies


def test_records_are_the_call_log(recorded):
    log_dir, replies = recorded
    log = switchyard.log.open(log_dir)
    assert log.dir == str(log_dir)
    records = log.records()
    assert len(log) == len(records) == 3
    assert [r.number for r in records] == [1, 2, 3]
    assert [r.number for r in log] == [1, 2, 3]
    by_prompt = {r.request["messages"][0]["content"][0]["text"]: r for r in records}
    whole = by_prompt["plan the work"]
    assert whole.role == "planner" and whole.backend == "mock" and not whole.stream
    assert whole.usage.output == replies[0].usage.output
    assert by_prompt["stream the plan"].stream
    failed = by_prompt["review it"]
    assert failed.error.kind == "BadRequest" and failed.role == "reviewer"
    # One record is the line `log export` writes for it.
    exported = [json.loads(line) for line in cli("log", "export", str(log_dir)).splitlines()]
    assert exported == records
    assert log.record(whole.number) == whole
    # The reply's bytes exactly as received.
    assert log.raw(whole.number) == replies[0].raw
    assert log.raw(by_prompt["stream the plan"].number) == replies[1].raw


def test_show_and_stats_are_what_the_command_prints(recorded):
    log_dir, _ = recorded
    log = switchyard.log.open(log_dir / "llm_log")  # its llm_log/ folder names it too
    assert log.dir == str(log_dir)
    assert log.show(1) == cli("log", "show", str(log_dir), "1")
    stats = log.stats()
    assert stats == json.loads(cli("log", "stats", str(log_dir), "--json"))
    assert stats.total.calls == 3 and stats.total.errors == 1
    assert stats.by_role.planner.calls == 2 and stats.by_role.reviewer.errors == 1
    # mock-small is priced, fault-400 is not: the total is a lower bound.
    assert stats.total.cost_usd > 0 and stats.total.cost_is_lower_bound
    assert set(log.run.roles) == {"planner", "reviewer"}


def test_bad_paths_and_numbers_say_what_was_expected(tmp_path, recorded):
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        switchyard.log.open(tmp_path / "nowhere")
    log = switchyard.log.open(recorded[0])
    with pytest.raises(switchyard.ConfigError, match="it holds calls 1 to 3"):
        log.record(99)
    with pytest.raises(OverflowError):
        log.record(-1)
