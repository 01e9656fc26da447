"""A Claude Code backend as one of a run's roles, called from Python: the test suite's
stand-in `claude` (a shell script printing Claude Code's JSON result, as the Rust tests'
stand-ins do), recorded in the run's call log."""

import json
import stat

import pytest

import switchyard

# One `claude -p --output-format json` result, as Claude Code prints it.
CLAUDE_OK = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "api_error_status": None,
    "duration_ms": 2843,
    "duration_api_ms": 2611,
    "num_turns": 1,
    "result": "Paris is the capital of France.",
    "stop_reason": "end_turn",
    "session_id": "4b1f6a8e-5d2c-4c1e-9a0b-3f2e1d0c9b8a",
    "total_cost_usd": 0.0421,
    "usage": {
        "input_tokens": 9,
        "cache_creation_input_tokens": 5120,
        "cache_read_input_tokens": 14000,
        "output_tokens": 11,
    },
    "permission_denials": [],
}


def stand_in(tmp_path):
    """`<tmp>/bin/claude`: records its argv and standard input, prints the result."""
    rec = tmp_path / "rec"
    rec.mkdir()
    result = tmp_path / "result.json"
    result.write_text(json.dumps(CLAUDE_OK))
    script = tmp_path / "bin" / "claude"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/sh\n"
        f"for a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{rec}/argv'\n"
        f"cat > '{rec}/stdin'\n"
        f"cat '{result}'\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script, rec


def records(run_dir):
    lines = []
    for segment in sorted((run_dir / "llm_log").glob("segment-*.jsonl")):
        lines += [json.loads(line) for line in segment.read_text().splitlines()]
    return lines


def test_a_claude_code_role_is_called_and_recorded(tmp_path):
    claude, rec = stand_in(tmp_path)
    log = tmp_path / "run"
    config = tmp_path / "campaign.yaml"
    config.write_text(
        f"log: {log}\n"
        "backends:\n"
        f"  claude-code: {{command: [{claude}]}}\n"
        "llm:\n"
        "  planner: mock/echo\n"
        "  reviewer: {model: claude-code/opus, effort: low}\n"
    )
    with switchyard.Run.open(config) as run:
        reviewer = run.llm("reviewer")
        assert reviewer.backend == "claude-code" and reviewer.role == "reviewer"
        reply = reviewer.complete("What is the capital of France?", system="answer briefly")
        plan = run.llm("planner").complete("plan")
    assert reply.text == "Paris is the capital of France."
    assert reply.finish == "stop"
    # Anthropic's usage made the library's: input includes the cached tokens.
    assert reply.usage.input == 9 + 5120 + 14000
    assert reply.usage.cached_input == 14000 and reply.usage.cache_write == 5120
    assert reply.usage.output == 11
    # Claude Code reports its own cost; that is the call's cost.
    assert reply.cost_usd == 0.0421
    assert json.loads(reply.raw)["session_id"] == CLAUDE_OK["session_id"]
    argv = (rec / "argv").read_text().splitlines()
    assert "-p" in argv and "json" in argv
    assert "What is the capital of France?" in (rec / "argv").read_text() + (
        rec / "stdin"
    ).read_text()
    assert plan.text == "plan"

    rows = {r["role"]: r for r in records(log)}
    assert set(rows) == {"planner", "reviewer"}
    assert rows["reviewer"]["backend"] == "claude-code"


    # The library replays only calls recorded with a wire dialect; a Claude Code call has
    # none, and replaying it says so rather than guessing.
    replay = tmp_path / "replay.yaml"
    replay.write_text(
        f"llm:\n  reviewer: {{backend: replay, log: {log}/llm_log, model: opus}}\n"
    )
    with switchyard.Run.open(replay) as run:
        with pytest.raises(switchyard.Unsupported, match="names no dialect"):
            run.llm("reviewer").complete("What is the capital of France?", system="answer briefly")
