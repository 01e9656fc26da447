"""Drives a Switchyard gateway with the official OpenAI, Anthropic and Google GenAI Python SDKs.

Usage: python sdk_clients.py BASE_URL

The gateway's `up-<dialect>` backends are the mock restricted to one dialect, so
`up-chat/...` from the chat client is pass-through and `up-messages/...` is translation.
Each case prints `ok <name>`; the first failure raises (non-zero exit).
"""

import json
import sys

import anthropic
import openai
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from sdk_connect import clients

BASE = sys.argv[1].rstrip("/")
oa, an, gm = clients(BASE)

WEATHER_CHAT = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}]
WEATHER_RESPONSES = [{
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}]
WEATHER_ANTHROPIC = [{
    "name": "get_weather",
    "description": "Weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}]

# Given as `parameters_json_schema`, which the SDK sends by its proto name.
WEATHER_GEMINI = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="get_weather",
    description="Weather in a city",
    parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)])


def ok(name):
    print("ok", name, flush=True)


def chat(upstream):
    model = f"up-{upstream}/echo"
    r = oa.chat.completions.create(model=model, messages=[{"role": "user", "content": "hello sdk"}])
    assert r.choices[0].message.content == "hello sdk", r
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, r.usage
    ok(f"chat {upstream} whole")

    text, usage = "", None
    stream = oa.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hello stream"}], stream=True,
        stream_options={"include_usage": True})
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        if chunk.usage:
            usage = chunk.usage
    assert text == "hello stream", text
    assert usage and usage.total_tokens > 0, usage
    ok(f"chat {upstream} stream")

    r = oa.chat.completions.create(
        model=f"up-{upstream}/tools", messages=[{"role": "user", "content": "weather?"}], tools=WEATHER_CHAT)
    call = r.choices[0].message.tool_calls[0]
    assert r.choices[0].finish_reason == "tool_calls", r
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}, call
    r2 = oa.chat.completions.create(
        model=f"up-{upstream}/tools",
        messages=[
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "18C"},
        ],
        tools=WEATHER_CHAT)
    assert "18C" in r2.choices[0].message.content, r2
    ok(f"chat {upstream} tools")

    names, args = [], ""
    for chunk in oa.chat.completions.create(
            model=f"up-{upstream}/tools", messages=[{"role": "user", "content": "weather?"}],
            tools=WEATHER_CHAT, stream=True):
        for tc in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            if tc.function and tc.function.name:
                names.append(tc.function.name)
            if tc.function and tc.function.arguments:
                args += tc.function.arguments
    assert names == ["get_weather"] and json.loads(args) == {"city": "Paris"}, (names, args)
    ok(f"chat {upstream} tools stream")


def responses(upstream):
    model = f"up-{upstream}/echo"
    r = oa.responses.create(model=model, input="hello responses", instructions="be brief")
    assert r.output_text == "hello responses", r
    assert r.usage.input_tokens > 0, r.usage
    ok(f"responses {upstream} whole")

    done = None
    text = ""
    for event in oa.responses.create(model=model, input="hello stream", stream=True):
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type == "response.completed":
            done = event.response
    assert text == "hello stream", text
    assert done is not None and done.usage.output_tokens > 0, done
    ok(f"responses {upstream} stream")

    r = oa.responses.create(model=f"up-{upstream}/tools", input="weather?", tools=WEATHER_RESPONSES)
    calls = [o for o in r.output if o.type == "function_call"]
    assert calls and calls[0].name == "get_weather" and json.loads(calls[0].arguments) == {"city": "Paris"}, r.output
    r2 = oa.responses.create(
        model=f"up-{upstream}/tools",
        input=[
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": calls[0].call_id, "name": "get_weather", "arguments": calls[0].arguments},
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "18C"},
        ],
        tools=WEATHER_RESPONSES)
    assert "18C" in r2.output_text, r2
    ok(f"responses {upstream} tools")

    items = []
    for event in oa.responses.create(model=f"up-{upstream}/tools", input="weather?", tools=WEATHER_RESPONSES, stream=True):
        if event.type == "response.output_item.done":
            items.append(event.item)
    fc = [i for i in items if i.type == "function_call"]
    assert fc and json.loads(fc[0].arguments) == {"city": "Paris"}, items
    ok(f"responses {upstream} tools stream")


def messages(upstream):
    model = f"up-{upstream}/echo"
    r = an.messages.create(model=model, max_tokens=64, system="be brief",
                           messages=[{"role": "user", "content": "hello claude"}])
    assert r.content[0].text == "hello claude", r
    assert r.usage.input_tokens > 0 and r.stop_reason == "end_turn", r
    ok(f"messages {upstream} whole")

    with an.messages.stream(model=model, max_tokens=64, messages=[{"role": "user", "content": "hello stream"}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text == "hello stream", text
    assert final.usage.output_tokens > 0, final.usage
    ok(f"messages {upstream} stream")

    r = an.messages.create(model=f"up-{upstream}/think+tools", max_tokens=2048, tools=WEATHER_ANTHROPIC,
                           messages=[{"role": "user", "content": "weather?"}])
    assert r.stop_reason == "tool_use", r
    use = [b for b in r.content if b.type == "tool_use"][0]
    assert use.name == "get_weather" and use.input == {"city": "Paris"}, use
    assert any(b.type == "thinking" for b in r.content), r.content
    r2 = an.messages.create(
        model=f"up-{upstream}/tools", max_tokens=2048, tools=WEATHER_ANTHROPIC,
        messages=[
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18C"}]},
        ])
    assert "18C" in r2.content[0].text, r2
    ok(f"messages {upstream} tools")

    with an.messages.stream(model=f"up-{upstream}/tools", max_tokens=512, tools=WEATHER_ANTHROPIC,
                            messages=[{"role": "user", "content": "weather?"}]) as s:
        final = s.get_final_message()
    use = [b for b in final.content if b.type == "tool_use"][0]
    assert use.input == {"city": "Paris"} and final.stop_reason == "tool_use", final
    ok(f"messages {upstream} tools stream")

    n = an.messages.count_tokens(model=model, messages=[{"role": "user", "content": "count me"}])
    assert n.input_tokens > 0, n
    ok(f"messages {upstream} count_tokens")


def gemini(upstream):
    model = f"up-{upstream}/echo"
    r = gm.models.generate_content(
        model=model, contents="hello gemini",
        config=types.GenerateContentConfig(system_instruction="be brief", max_output_tokens=64, temperature=0.5))
    assert r.text == "hello gemini", r
    assert r.usage_metadata.prompt_token_count > 0 and r.usage_metadata.candidates_token_count > 0, r.usage_metadata
    assert r.candidates[0].finish_reason == types.FinishReason.STOP, r
    ok(f"gemini {upstream} whole")

    text, usage = "", None
    for chunk in gm.models.generate_content_stream(model=model, contents="hello stream"):
        text += chunk.text or ""
        if chunk.usage_metadata:
            usage = chunk.usage_metadata
    assert text == "hello stream", text
    assert usage and usage.total_token_count > 0, usage
    ok(f"gemini {upstream} stream")

    config = types.GenerateContentConfig(tools=[WEATHER_GEMINI])
    tools = f"up-{upstream}/tools"
    r = gm.models.generate_content(model=tools, contents="weather?", config=config)
    calls = r.function_calls
    assert calls and calls[0].name == "get_weather" and calls[0].args == {"city": "Paris"}, r
    r2 = gm.models.generate_content(
        model=tools,
        contents=[
            types.Content(role="user", parts=[types.Part.from_text(text="weather?")]),
            r.candidates[0].content,
            types.Content(role="user", parts=[
                types.Part.from_function_response(name="get_weather", response={"result": "18C"})]),
        ],
        config=config)
    assert "18C" in r2.text, r2
    ok(f"gemini {upstream} tools")

    calls = []
    for chunk in gm.models.generate_content_stream(model=tools, contents="weather?", config=config):
        calls += chunk.function_calls or []
    assert [c.name for c in calls] == ["get_weather"] and calls[0].args == {"city": "Paris"}, calls
    ok(f"gemini {upstream} tools stream")

    n = gm.models.count_tokens(model=model, contents="count me please")
    assert n.total_tokens > 0, n
    ok(f"gemini {upstream} count_tokens")

    m = gm.models.get(model=model)
    assert m.name == f"models/{model}", m
    assert "generateContent" in (m.supported_actions or []), m
    ok(f"gemini {upstream} models.get")


def gemini_models():
    listed = list(gm.models.list())
    assert listed and all(m.name.startswith("models/") for m in listed), listed
    assert any("countTokens" in (m.supported_actions or []) for m in listed), listed
    ok("gemini models.list")

    # With api_version v1 the SDK asks `/v1/models`, the OpenAI clients' path too: the
    # gateway answers in Gemini's shape when the caller speaks Gemini (x-goog-api-key).
    v1 = genai.Client(api_key="sk-test", http_options=types.HttpOptions(base_url=BASE, api_version="v1"))
    assert [m.name for m in v1.models.list()] == [m.name for m in listed]
    assert v1.models.get(model="up-chat/echo").name == "models/up-chat/echo"
    assert v1.models.generate_content(model="up-chat/echo", contents="hello v1").text == "hello v1"
    ok("gemini v1 models.list, models.get, generate_content")

    m = oa.models.retrieve("up-chat/echo")
    assert m.id == "up-chat/echo" and m.object == "model", m
    ok("openai models.retrieve")


def errors():
    try:
        an.messages.create(model="up-chat/context-overflow", max_tokens=16, messages=[{"role": "user", "content": "x"}])
        raise AssertionError("no error")
    except anthropic.BadRequestError as e:
        assert "prompt is too long" in str(e), e
    try:
        oa.chat.completions.create(model="up-messages/fault-429", messages=[{"role": "user", "content": "x"}])
        raise AssertionError("no error")
    except openai.RateLimitError as e:
        assert e.code == "rate_limit_exceeded", e
    try:
        gm.models.generate_content(model="up-chat/context-overflow", contents="x")
        raise AssertionError("no error")
    except genai_errors.ClientError as e:
        assert e.code == 400 and e.status == "INVALID_ARGUMENT", e
    ok("errors")


for upstream in ["chat", "messages", "gemini"]:
    chat(upstream)
for upstream in ["responses", "chat", "messages"]:
    responses(upstream)
for upstream in ["messages", "chat", "responses"]:
    messages(upstream)
for upstream in ["gemini", "chat", "responses", "messages"]:
    gemini(upstream)
gemini_models()
errors()
print("all ok", flush=True)
