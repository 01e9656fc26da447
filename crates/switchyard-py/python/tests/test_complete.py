"""Whole replies: the text, parts, usage, cost, raw bytes and attempts, and the request's
options reaching the wire."""

import json

import pytest

import switchyard


def test_a_prompt_gets_the_echo_with_usage_and_raw_bytes(llm):
    reply = llm.complete("hello there", max_tokens=50)
    assert reply.text == "hello there"
    assert reply.finish == "stop"
    assert reply.usage.input > 0 and reply.usage.output > 0
    assert reply.usage.cached_input == 0 and reply.usage.reasoning == 0
    assert json.loads(reply.raw)["object"] == "chat.completion"
    assert reply.content == [{"type": "text", "text": "hello there"}]
    assert [a["number"] for a in reply.attempts] == [1]
    # mock/echo has no price: the cost is unknown, not zero.
    assert reply.cost_usd is None


def test_a_priced_model_has_a_cost():
    reply = switchyard.llm("mock/small").complete("price me")
    assert reply.cost_usd is not None and reply.cost_usd > 0


def test_cache_usage_keeps_the_documented_meanings():
    usage = switchyard.llm("mock/echo+cache").complete("cached").usage
    # Chat completions report cached tokens but not cache writes.
    assert usage.cached_input == 1024
    assert usage.input > usage.cached_input
    assert usage.uncached_input == usage.input - usage.cached_input - usage.cache_write


def test_messages_system_and_a_tool_round_trip():
    llm = switchyard.llm("mock/tools")
    tools = [
        {
            "name": "lookup",
            "description": "look a word up",
            "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
        }
    ]
    messages = [{"role": "user", "content": "look up 'switchyard'"}]
    first = llm.complete(messages, system="be brief", tools=tools)
    assert first.finish == "tool_calls"
    call = first.tool_calls[0]
    assert call["name"] == "lookup" and isinstance(call["arguments"], str)
    messages += [first, {"role": "tool", "tool_call_id": call["id"], "content": "a rail yard"}]
    second = switchyard.llm("mock/echo").complete(messages, tools=tools)
    assert "a rail yard" in second.text


def test_thinking_is_a_part_of_its_own():
    reply = switchyard.llm("mock/think").complete("why?")
    assert reply.thinking
    assert reply.content[0]["type"] == "thinking"
    assert reply.to_message()["role"] == "assistant"


def test_settings_of_the_handle_fill_the_request():
    llm = switchyard.llm("mock/echo", max_tokens=7, temperature=0.5)
    assert llm.complete("x").text == "x"
    with pytest.raises(TypeError, match="did you mean `max_tokens`"):
        switchyard.llm("mock/echo", max_token=7)
    with pytest.raises(ValueError, match="temperature"):
        switchyard.llm("mock/echo", temperature="hot")


def test_bad_arguments_raise_clear_python_errors(llm):
    with pytest.raises(TypeError, match="did you mean `max_tokens`"):
        llm.complete("x", max_token=3)
    with pytest.raises(TypeError, match="prompt must be a str or a list"):
        llm.complete(42)
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        llm.complete([{"role": "narrator", "content": "x"}])
    with pytest.raises(ValueError, match="empty"):
        llm.complete([])
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested"):
        llm.complete([{"role": "user", "content": "x", "extra": loop}])


def test_the_default_model_comes_from_the_environment_and_an_override_wins(monkeypatch):
    monkeypatch.setenv("SWITCHYARD_MODEL", "mock/say:from-env")
    assert switchyard.llm().complete("x").text == "from-env"
    assert switchyard.llm("mock/echo").complete("explicit").text == "explicit"
    monkeypatch.delenv("SWITCHYARD_MODEL")
    with pytest.raises(switchyard.ConfigError, match="SWITCHYARD_MODEL"):
        switchyard.llm()


def make_llm(backend=None, **overrides):
    """A seed framework's factory: the default from the environment, overrides on top."""
    return switchyard.llm(backend, **overrides)


def test_a_make_llm_style_factory(monkeypatch):
    monkeypatch.setenv("SWITCHYARD_MODEL", "mock/echo")
    assert make_llm().label == "mock/echo"
    assert make_llm("mock/think", max_tokens=100).complete("q").thinking
