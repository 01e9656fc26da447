"""A Python backend's `stream(request)`: used when the caller streams, recorded, and
replayed; without one a streamed call gets the `complete` reply as one stream. Like any
backend's, a reply needs text or a tool call, and usage (else it is malformed)."""

import asyncio
import json

import pytest

import switchyard


def records(run_dir):
    lines = []
    for segment in sorted((run_dir / "llm_log").glob("segment-*.jsonl")):
        lines += [json.loads(line) for line in segment.read_text().splitlines()]
    return lines


class Streaming:
    """Streams its answer word by word, then a tool call, usage and the finish."""

    def __init__(self):
        self.completed = 0
        self.streamed = 0

    def complete(self, request):
        self.completed += 1
        return {"text": f"whole: {request.prompt}", "usage": {"input": 2, "output": 2}}

    def stream(self, request):
        self.streamed += 1
        yield {"thinking": "let me see"}
        for word in request.prompt.split():
            yield word + " "
        yield {"tool_call": {"id": "call_1", "name": "lookup", "arguments": {"q": "x"}}}
        yield {"usage": {"input": 5, "output": 7}}


def config(tmp_path, log=None):
    path = tmp_path / "run.yaml"
    path.write_text(
        (f"log: {log}\n" if log else "")
        + "llm:\n  planner: {model: mock/small, retry: {malformed: [0.01]}}\n"
    )
    return path


def test_a_python_stream_is_used_when_the_caller_streams(tmp_path):
    log = tmp_path / "log"
    backend = Streaming()
    with switchyard.Run.open(config(tmp_path, log), backends={"planner": backend}) as run:
        planner = run.llm("planner")
        stream = planner.stream("one two three")
        kinds = [e.type for e in stream]
        reply = stream.reply
        whole = planner.complete("not streamed")
    assert backend.streamed == 1 and backend.completed == 1
    assert kinds.count("text_delta") == 3
    assert "thinking_delta" in kinds and "tool_call_start" in kinds
    assert reply.text == "one two three "
    assert reply.thinking == "let me see"
    assert reply.tool_calls[0]["name"] == "lookup"
    assert json.loads(reply.tool_calls[0]["arguments"]) == {"q": "x"}
    assert reply.finish == "tool_calls"
    assert reply.usage.output == 7 and reply.cost_usd is not None
    # The bytes are chat completion chunks, as a chat server streams them.
    assert reply.raw.startswith(b"data: ") and reply.raw.rstrip().endswith(b"data: [DONE]")
    assert whole.text == "whole: not streamed"
    rows = records(log)
    assert [r["stream"] for r in rows] == [True, False]

    # Replayed, the stream gives the same reply without the backend.
    replay = tmp_path / "replay.yaml"
    replay.write_text(
        f"llm:\n  planner: {{backend: replay, log: {log}/llm_log, model: mock-small}}\n"
    )
    with switchyard.Run.open(replay) as run:
        again = run.llm("planner").stream("one two three")
        list(again)
        assert again.reply.text == reply.text
        assert again.reply.tool_calls == reply.tool_calls


def test_a_python_stream_with_astream(tmp_path):
    run = switchyard.Run.open(config(tmp_path), backends={"planner": Streaming()})

    async def main():
        stream = run.llm("planner").astream("a b")
        return [e.text async for e in stream if e.type == "text_delta"]

    assert asyncio.run(main()) == ["a ", "b "]


def test_without_stream_a_streamed_call_gets_the_complete_reply(tmp_path):
    class Whole:
        def complete(self, request):
            return {"text": "all at once", "usage": {"input": 1, "output": 3}}

    run = switchyard.Run.open(config(tmp_path), backends={"planner": Whole()})
    stream = run.llm("planner").stream("x")
    events = list(stream)
    assert [e.text for e in events if e.type == "text_delta"] == ["all at once"]
    assert stream.reply.text == "all at once"


def test_a_failure_before_the_first_item_is_retried(tmp_path):
    class FlakyStream:
        calls = 0

        def complete(self, request):
            raise AssertionError("not used")

        def stream(self, request):
            FlakyStream.calls += 1
            if FlakyStream.calls == 1:
                raise switchyard.ProviderReplyMalformed("nothing came")
            yield "second time"
            yield {"usage": {"input": 1, "output": 2}}

    run = switchyard.Run.open(config(tmp_path), backends={"planner": FlakyStream()})
    stream = run.llm("planner").stream("x")
    list(stream)
    assert stream.reply.text == "second time" and FlakyStream.calls == 2


def test_a_failure_mid_stream_ends_it_and_keeps_the_text(tmp_path):
    class Breaks:
        def complete(self, request):
            raise AssertionError("not used")

        def stream(self, request):
            yield "kept "
            raise RuntimeError("the model fell over")

    run = switchyard.Run.open(config(tmp_path), backends={"planner": Breaks()})
    stream = run.llm("planner").stream("x")
    with pytest.raises(switchyard.ProviderError, match="fell over"):
        for _ in stream:
            pass
    assert stream.reply.text == "kept "


def test_a_bad_item_says_what_an_item_is(tmp_path):
    class Bad:
        def complete(self, request):
            raise AssertionError("not used")

        def stream(self, request):
            yield 42

    run = switchyard.Run.open(config(tmp_path), backends={"planner": Bad()})
    with pytest.raises(switchyard.Error, match="str or dict"):
        list(run.llm("planner").stream("x"))
