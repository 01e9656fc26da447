"""Streams, sync and async: the events, and the reply assembled beside them."""

import asyncio

import pytest

import switchyard


def test_a_stream_gives_events_and_the_whole_reply(llm):
    stream = llm.stream("streaming text")
    events = list(stream)
    assert events[0].type == "start"
    assert "".join(e.text for e in events if e.type == "text_delta") == "streaming text"
    assert any(e.type == "usage" for e in events)
    assert events[-1].type == "finish" and events[-1].reason == "stop"
    reply = stream.reply
    assert reply.text == "streaming text" and reply.usage.output > 0
    assert b"data:" in reply.raw


def test_thinking_and_tool_calls_stream():
    stream = switchyard.llm("mock/think+tools").stream(
        "go", tools=[{"name": "a", "parameters": {"type": "object"}}]
    )
    kinds = {e.type for e in stream}
    assert "thinking_delta" in kinds and "tool_call_start" in kinds
    assert stream.reply.tool_calls


def test_an_error_before_output_raises_at_the_call():
    with pytest.raises(switchyard.ProviderQuotaExhausted):
        switchyard.llm("mock/quota").stream("x")


def test_an_error_mid_stream_raises_from_the_iterator_and_keeps_the_text():
    stream = switchyard.llm("mock/error-mid-stream", retry=False).stream("some text to cut")
    with pytest.raises(switchyard.Error):
        for _ in stream:
            pass
    assert stream.reply is not None


def test_async_stream():
    async def main():
        llm = switchyard.llm("mock/echo")
        texts = [e.text async for e in llm.astream("async stream") if e.type == "text_delta"]
        return "".join(texts)

    assert asyncio.run(main()) == "async stream"
