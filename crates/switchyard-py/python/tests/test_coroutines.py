"""Every async method is a plain coroutine: made before any loop runs, it runs when
awaited, inside the loop that awaits it (`asyncio.run(llm.acomplete("x"))`)."""

import asyncio

import pytest

import switchyard


def test_acomplete_is_a_coroutine_asyncio_run_accepts(llm):
    coroutine = llm.acomplete("made before the loop")
    assert asyncio.iscoroutine(coroutine)
    reply = asyncio.run(coroutine)
    assert reply.text == "made before the loop"


def test_an_astream_step_is_a_coroutine_too(llm):
    stream = llm.astream("one two")
    step = stream.__anext__()
    assert asyncio.iscoroutine(step)
    first = asyncio.run(step)
    assert first.type


def test_nothing_is_sent_until_awaited(llm, mock_server):
    before = mock_server.received
    coroutine = llm.acomplete("never awaited")
    coroutine.close()
    assert mock_server.received == before


def test_a_coroutine_awaited_twice_is_refused(llm):
    coroutine = llm.acomplete("once")

    async def twice():
        await coroutine
        await coroutine

    with pytest.raises(RuntimeError, match="already awaited"):
        asyncio.run(twice())


def test_a_cancelled_call_raises_cancelled_in_the_task():
    slow = switchyard.llm("mock/hang")

    async def main():
        task = asyncio.ensure_future(slow.acomplete("slow"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_typed_errors_raise_from_the_awaited_coroutine():
    coroutine = switchyard.llm("mock/fault-400", retry=False).acomplete("x")
    with pytest.raises(switchyard.BadRequest):
        asyncio.run(coroutine)


def test_a_bad_option_raises_when_awaited_as_an_async_def_would(llm):
    coroutine = llm.acomplete("x", max_tokenz=5)
    with pytest.raises(TypeError, match="max_tokenz"):
        asyncio.run(coroutine)
