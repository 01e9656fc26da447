"""A Python backend answering a str (or a dict without `usage`) gives a reply whose usage
is unknown, at once: not a malformed reply asked again for half a minute. Recorded, it
replays as it was."""

import json
import time

import switchyard


class Plain:
    def __init__(self):
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        return f"plain: {request.prompt}"


class NoUsage:
    def complete(self, request):
        return {"text": "a dict without usage"}

    def stream(self, request):
        yield "streamed "
        yield "without usage"


def test_a_str_reply_is_a_reply_with_usage_unknown(tmp_path):
    log = tmp_path / "log"
    config = tmp_path / "run.yaml"
    config.write_text(f"log: {log}\nllm:\n  planner: mock/small\n")
    backend = Plain()
    started = time.monotonic()
    with switchyard.Run.open(config, backends={"planner": backend}) as run:
        reply = run.llm("planner").complete("hello")
    assert time.monotonic() - started < 5
    assert reply.text == "plain: hello"
    assert reply.usage is None
    assert backend.calls == 1 and len(reply.attempts) == 1
    (record,) = [
        json.loads(line)
        for segment in sorted((log / "llm_log").glob("segment-*.jsonl"))
        for line in segment.read_text().splitlines()
    ]
    assert record["usage"] is None and record["error"] is None
    # Priced by the record's one rule (a priced call without usage counts nothing).
    assert reply.cost_usd == record["cost_usd"]

    replay = {"llm": {"planner": {"backend": "replay", "log": str(log / "llm_log"), "model": "mock-small"}}}
    with switchyard.Run.open(replay) as run:
        again = run.llm("planner").complete("hello")
    assert again.text == "plain: hello" and again.usage is None


def test_a_dict_or_stream_without_usage_is_usage_unknown_too(tmp_path):
    config = {"llm": {"planner": "mock/small"}}
    run = switchyard.Run.open(config, backends={"planner": NoUsage()})
    assert run.llm("planner").complete("x").usage is None
    stream = run.llm("planner").stream("x")
    assert "".join(e.text or "" for e in stream) == "streamed without usage"
    assert stream.reply.usage is None


def test_an_empty_str_is_still_malformed(tmp_path):
    class Empty:
        def complete(self, request):
            return ""

    config = {"llm": {"planner": {"model": "mock/small", "retry": {"malformed": [0.01]}}}}
    run = switchyard.Run.open(config, backends={"planner": Empty()})
    try:
        run.llm("planner").complete("x")
    except switchyard.ProviderReplyMalformed as e:
        assert "neither text nor tool calls" in str(e)
    else:
        raise AssertionError("an empty reply was accepted")
