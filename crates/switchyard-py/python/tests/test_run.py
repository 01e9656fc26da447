"""Run configs: four roles (one of them Claude Code, the stand-in `claude`) recorded, then
replayed byte for byte; the check as data; a Python backend by role, retried on the
malformed schedule when it raises."""

import json
import subprocess
import sys

import pytest

import switchyard
from claude_stand_in import StandIn

ROLES = ["planner", "proposer", "reviewer", "distiller"]
MODELS = {"planner": "think", "proposer": "echo", "reviewer": "opus", "distiller": "echo"}


def campaign_config(tmp_path, log, claude):
    config = tmp_path / "campaign.yaml"
    config.write_text(
        f"log: {log}\n"
        "backends:\n"
        f"  claude-code: {{command: [{claude.program}]}}\n"
        "llm:\n"
        "  planner: {model: mock/think, max_tokens: 500}\n"
        "  proposer: mock/echo\n"
        "  reviewer: {model: claude-code/opus, effort: low}\n"
        "  distiller: {model: mock/echo, dialect: gemini}\n"
        "budget: {max_calls: 100}\n"
        "unknown_cost: allow\n"
    )
    return config


def records(run_dir):
    lines = []
    for segment in sorted((run_dir / "llm_log").glob("segment-*.jsonl")):
        lines += [json.loads(line) for line in segment.read_text().splitlines()]
    return lines


def same_reply(again, first):
    assert again.raw == first.raw
    assert again.text == first.text
    assert again.usage.to_dict() == first.usage.to_dict()
    assert again.to_dict() == first.to_dict()


def test_a_four_role_campaign_is_recorded_then_replayed_byte_for_byte(tmp_path, mock_server):
    claude = StandIn(tmp_path)
    recorded = tmp_path / "recorded"
    with switchyard.Run.open(campaign_config(tmp_path, recorded, claude)) as run:
        assert run.roles == sorted(ROLES)
        assert str(run.dir) == str(recorded)
        report = run.check()
        assert report["ok"] and {r["role"] for r in report["roles"]} == set(ROLES)
        first = {role: run.llm(role).complete(f"{role}: step 1") for role in ROLES}
        streamed = {}
        for role in ROLES:
            stream = run.llm(role).stream(f"{role}: step 2")
            streamed[role] = ([e.to_dict() for e in stream], stream.reply)
    rows = records(recorded)
    assert sorted(r["role"] for r in rows) == sorted(ROLES * 2)
    assert {r["backend"] for r in rows if r["role"] == "reviewer"} == {"claude-code"}
    assert claude.runs == 2
    assert first["reviewer"].text == "Paris is the capital of France."
    sent = mock_server.received

    # Every role pointed at the recorded log: the same bytes, no provider called, the
    # Claude Code program not run.
    replay = tmp_path / "replay.yaml"
    replay.write_text(
        "llm:\n"
        + "".join(
            f"  {role}: {{backend: replay, log: {recorded}/llm_log, model: {MODELS[role]}}}\n"
            for role in ROLES
        )
    )
    with switchyard.Run.open(replay) as run:
        for role in ROLES:
            same_reply(run.llm(role).complete(f"{role}: step 1"), first[role])
            stream = run.llm(role).stream(f"{role}: step 2")
            events = [e.to_dict() for e in stream]
            assert events == streamed[role][0], role
            same_reply(stream.reply, streamed[role][1])
        with pytest.raises(switchyard.ReplayExhausted) as info:
            run.llm("planner").complete("a prompt never recorded")
        assert info.value.role == "planner" and info.value.nearest
    assert claude.runs == 2
    assert mock_server.received == sent


def test_check_as_data_without_opening(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("llm:\n  planner: nosuch/model\n")
    report = switchyard.check(config)
    assert not report["ok"]
    assert "nosuch" in report["problems"][0]["message"]


class Scripted:
    """A backend written in Python: fails once as malformed, then answers."""

    def __init__(self):
        self.calls = 0
        self.seen = []

    def complete(self, request):
        self.calls += 1
        self.seen.append((request.role, request.model, request.prompt, request.system))
        if self.calls == 1:
            raise switchyard.ProviderReplyMalformed("empty answer")
        return {"text": f"python says: {request.prompt}", "usage": {"input": 3, "output": 4}}


def test_a_python_backend_by_role_is_recorded_and_retried_when_malformed(tmp_path):
    log = tmp_path / "log"
    config = tmp_path / "run.yaml"
    config.write_text(
        f"log: {log}\n"
        "llm:\n"
        "  planner: {model: mock/small, retry: {malformed: [0.01]}}\n"
        "  reviewer: mock/echo\n"
    )
    backend = Scripted()
    with switchyard.Run.open(config, backends={"planner": backend}) as run:
        reply = run.llm("planner").complete("hello", system="be kind")
        assert run.llm("reviewer").complete("still the mock").text == "still the mock"
    assert reply.text == "python says: hello"
    assert [a["error_kind"] for a in reply.attempts] == ["ProviderReplyMalformed", None]
    # Priced at the role's model's price, like any backend.
    assert reply.cost_usd is not None
    assert backend.seen[-1] == ("planner", "mock-small", "hello", "be kind")
    rows = records(log)
    assert sorted(r["role"] for r in rows) == ["planner", "reviewer"]


def test_a_python_backend_without_complete_is_refused(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("llm:\n  planner: mock/echo\n")
    with pytest.raises(TypeError, match="complete"):
        switchyard.Run.open(config, backends={"planner": object()})


def test_a_python_backend_raising_anything_else_is_a_provider_error(tmp_path):
    class Broken:
        def complete(self, request):
            raise KeyError("oops")

    config = tmp_path / "run.yaml"
    config.write_text("llm:\n  planner: mock/echo\n")
    run = switchyard.Run.open(config, backends={"planner": Broken()})
    with pytest.raises(switchyard.ProviderError, match="KeyError"):
        run.llm("planner").complete("x")


def test_the_cli_is_installed():
    out = subprocess.run(
        [sys.executable, "-m", "switchyard._cli", "backends", "list"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "mock" in out.stdout
