"""One handle shared: 1,000 concurrent asyncio calls, and threads."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import switchyard


def test_a_thousand_concurrent_asyncio_calls(llm):
    async def main():
        replies = await asyncio.gather(*(llm.acomplete(f"call {i}") for i in range(1000)))
        return [r.text for r in replies]

    assert asyncio.run(main()) == [f"call {i}" for i in range(1000)]


def test_acomplete_raises_typed_errors():
    async def main():
        await switchyard.llm("mock/quota").acomplete("x")

    try:
        asyncio.run(main())
    except switchyard.ProviderQuotaExhausted as e:
        assert e.status == 429
    else:
        raise AssertionError("no error")


def test_threads_share_one_handle(llm):
    with ThreadPoolExecutor(max_workers=16) as pool:
        texts = list(pool.map(lambda i: llm.complete(f"thread {i}").text, range(200)))
    assert texts == [f"thread {i}" for i in range(200)]
