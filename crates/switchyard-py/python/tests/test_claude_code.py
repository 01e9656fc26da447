"""A Claude Code backend as one of a run's roles, called from Python: the test suite's
stand-in `claude` (claude_stand_in.py), whole and streamed, recorded in the run's call
log, and replayed from it without running the program."""

import json

import switchyard
from claude_stand_in import CLAUDE_OK, DELTAS, StandIn, stream_lines


def records(run_dir):
    lines = []
    for segment in sorted((run_dir / "llm_log").glob("segment-*.jsonl")):
        lines += [json.loads(line) for line in segment.read_text().splitlines()]
    return lines


def campaign(tmp_path, claude, log):
    config = tmp_path / "campaign.yaml"
    config.write_text(
        f"log: {log}\n"
        "backends:\n"
        f"  claude-code: {{command: [{claude.program}]}}\n"
        "llm:\n"
        "  planner: mock/echo\n"
        "  reviewer: {model: claude-code/opus, effort: low}\n"
    )
    return config


def replaying(tmp_path, log):
    """The reviewer pointed at the recorded log."""
    config = tmp_path / "replay.yaml"
    config.write_text(
        f"llm:\n  reviewer: {{backend: replay, log: {log}/llm_log, model: opus}}\n"
    )
    return config


def test_a_claude_code_role_is_called_recorded_and_replayed(tmp_path):
    claude = StandIn(tmp_path)
    log = tmp_path / "run"
    with switchyard.Run.open(campaign(tmp_path, claude, log)) as run:
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
    assert "-p" in claude.argv and "json" in claude.argv
    assert claude.stdin == "What is the capital of France?"
    assert plan.text == "plan"

    rows = {r["role"]: r for r in records(log)}
    assert set(rows) == {"planner", "reviewer"}
    assert rows["reviewer"]["backend"] == "claude-code"
    assert rows["reviewer"]["dialect"] is None

    # Replayed: the Claude Code call is read again by Claude Code's own reader (its
    # backend's kind is in the recorded run.yaml), and the program does not run.
    assert claude.runs == 1
    with switchyard.Run.open(replaying(tmp_path, log)) as run:
        again = run.llm("reviewer").complete(
            "What is the capital of France?", system="answer briefly"
        )
    assert claude.runs == 1
    assert again.raw == reply.raw
    assert again.text == reply.text and again.finish == reply.finish
    assert again.usage.to_dict() == reply.usage.to_dict()
    assert again.cost_usd == reply.cost_usd and again.id == reply.id


def test_a_claude_code_role_streams_its_text_recorded_and_replayed(tmp_path):
    claude = StandIn(tmp_path)
    log = tmp_path / "run"
    with switchyard.Run.open(campaign(tmp_path, claude, log)) as run:
        stream = run.llm("reviewer").stream("What is the capital of France?")
        events = list(stream)
    assert "stream-json" in claude.argv and "--include-partial-messages" in claude.argv
    # The text as Claude Code wrote it, delta by delta, then the result's usage and finish.
    assert [e.text for e in events if e.type == "text_delta"] == DELTAS
    assert [e.type for e in events][-2:] == ["usage", "finish"]
    reply = stream.reply
    assert reply.text == "".join(DELTAS)
    assert reply.usage.input == 9 + 5120 + 14000 and reply.usage.output == 11
    assert reply.id == CLAUDE_OK["session_id"] and reply.finish == "stop"
    assert reply.raw == stream_lines().encode()
    assert reply.cost_usd == 0.0421
    row = records(log)[0]
    assert row["stream"] is True and row["role"] == "reviewer"
    assert row["provider_cost_usd"] == 0.0421

    # Replayed as a stream: the same events and reply; and whole: the same reply.
    with switchyard.Run.open(replaying(tmp_path, log)) as run:
        replayed = run.llm("reviewer").stream("What is the capital of France?")
        again = list(replayed)
    assert claude.runs == 1
    assert [e.to_dict() for e in again] == [e.to_dict() for e in events]
    assert replayed.reply.raw == reply.raw
    assert replayed.reply.to_dict() == reply.to_dict()


def test_a_claude_code_stream_from_asyncio(tmp_path):
    import asyncio

    claude = StandIn(tmp_path)

    async def main(run):
        llm = run.llm("reviewer")
        return [e.text async for e in llm.astream("capital?") if e.type == "text_delta"]

    with switchyard.Run.open(campaign(tmp_path, claude, tmp_path / "run")) as run:
        assert asyncio.run(main(run)) == DELTAS


def test_a_claude_code_roles_cost_is_the_records_by_the_librarys_one_rule(tmp_path):
    # One rule for the reply and the record (`Llm::cost`): the model's price when it has
    # one, else Claude Code's own report. The package once reported Claude Code's cost
    # first, so a priced role's reply and record disagreed.
    claude = StandIn(tmp_path)
    for price, log in ((None, tmp_path / "unpriced"), ("{input: 1, output: 10}", tmp_path / "priced")):
        config = campaign(tmp_path, claude, log)
        if price:
            config.write_text(config.read_text().replace("effort: low}", f"effort: low, price: {price}}}"))
        with switchyard.Run.open(config) as run:
            reply = run.llm("reviewer").complete("What is the capital of France?")
        (row,) = records(log)
        assert row["provider_cost_usd"] == 0.0421
        assert reply.cost_usd == row["cost_usd"], (price, row)
        if price:
            # Priced by the role's price (every token at least the input price, 1 $/M).
            assert reply.cost_usd != 0.0421 and reply.cost_usd >= (9 + 5120 + 14000) / 1e6
        else:
            assert reply.cost_usd == 0.0421
