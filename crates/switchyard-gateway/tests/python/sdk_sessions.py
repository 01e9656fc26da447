"""Whole agent sessions through a Switchyard gateway, driven by the official SDKs.

Usage: python sdk_sessions.py BASE_URL

For every client SDK (OpenAI chat, OpenAI Responses, Anthropic Messages, google-genai)
x every upstream dialect (the gateway's `up-<dialect>` backends: the mock, enforcing each
provider's multi-turn rules) x streamed or not, one session:

  1. the user asks, thinking on     -> thinking + two tool calls in one reply
  2. their results                  -> thinking + a second tool round (one call)
  3. its result                     -> thinking + the final answer
  4. a follow-up question           -> the loop starts again: two calls
  5. their results                  -> a second round
  6. its result                     -> the final answer

Each turn sends back the whole history exactly as the SDK returned it, as an agent does.
The mock refuses a turn whose history lost the state it issued, so a session completes
only when the gateway carried that state across. Prints `ok <client> <upstream> <mode>`
per session; the first failure raises.
"""

import json
import sys

import anthropic
import openai
from google import genai
from google.genai import types

BASE = sys.argv[1].rstrip("/")
MODEL = "gemini-3-pro+agent+think"
UPSTREAMS = ["chat", "responses", "messages", "gemini"]

oa = openai.OpenAI(base_url=BASE + "/v1", api_key="sk-test", max_retries=0)
an = anthropic.Anthropic(base_url=BASE, api_key="sk-test", max_retries=0)
gm = genai.Client(api_key="sk-test", http_options=types.HttpOptions(base_url=BASE, api_version="v1beta"))

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [("get_weather", "Weather in a city"), ("get_time", "Local time in a city")]


def result_of(name, args):
    city = json.loads(args).get("city", "?") if isinstance(args, str) else args.get("city", "?")
    return f"{name}({city}) = " + ("sunny, 21C" if name == "get_weather" else "14:05")


def check_round(turn, calls, text):
    """The agent loop's shape: 2 calls, then 1, then an answer naming the results."""
    step = turn % 3
    if step == 0:
        assert len(calls) == 2, f"turn {turn + 1}: expected two tool calls, got {calls} / {text!r}"
    elif step == 1:
        assert len(calls) == 1, f"turn {turn + 1}: expected one tool call, got {calls} / {text!r}"
    else:
        assert not calls and "Done after 2 tool rounds" in text and "sunny, 21C" in text, \
            f"turn {turn + 1}: expected the final answer, got {calls} / {text!r}"


def session(tag, user_turn, tool_turn):
    """Six requests: two agent loops of three requests each."""
    for turn in range(6):
        if turn % 3 == 0:
            question = "What is the weather and the time in Paris?" if turn == 0 else "And in Lyon?"
            calls, text = user_turn(f"[{tag}] {question}")
        else:
            calls, text = tool_turn(prev_calls)
        check_round(turn, calls, text)
        prev_calls = calls


# --- OpenAI chat completions -------------------------------------------------------
def chat_session(upstream, stream):
    model = f"up-{upstream}/{MODEL}"
    tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": SCHEMA}} for n, d in TOOLS]
    messages = []

    def call():
        if not stream:
            r = oa.chat.completions.create(model=model, messages=messages, tools=tools, reasoning_effort="high")
            m = r.choices[0].message
            calls = [(c.id, c.function.name, c.function.arguments) for c in (m.tool_calls or [])]
            text = m.content or ""
        else:
            text, acc = "", {}
            for chunk in oa.chat.completions.create(model=model, messages=messages, tools=tools,
                                                    reasoning_effort="high", stream=True):
                if not chunk.choices:
                    continue
                d = chunk.choices[0].delta
                text += d.content or ""
                for tc in d.tool_calls or []:
                    slot = acc.setdefault(tc.index, ["", "", ""])
                    slot[0] += tc.id or ""
                    slot[1] += (tc.function.name or "") if tc.function else ""
                    slot[2] += (tc.function.arguments or "") if tc.function else ""
            calls = [tuple(acc[i]) for i in sorted(acc)]
        entry = {"role": "assistant", "content": text or None}
        if calls:
            entry["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                                   for i, n, a in calls]
        messages.append(entry)
        return calls, text

    def user_turn(q):
        messages.append({"role": "user", "content": q})
        return call()

    def tool_turn(calls):
        for i, n, a in calls:
            messages.append({"role": "tool", "tool_call_id": i, "content": result_of(n, a)})
        return call()

    session(f"chat {upstream} {stream}", user_turn, tool_turn)


# --- OpenAI Responses (Codex's dialect) -------------------------------------------
def responses_session(upstream, stream):
    model = f"up-{upstream}/{MODEL}"
    tools = [{"type": "function", "name": n, "description": d, "parameters": SCHEMA} for n, d in TOOLS]
    items = []

    def call():
        kwargs = dict(model=model, input=items, tools=tools, store=False,
                      reasoning={"effort": "high", "summary": "auto"}, include=["reasoning.encrypted_content"])
        if not stream:
            r = oa.responses.create(**kwargs)
        else:
            r = None
            for event in oa.responses.create(stream=True, **kwargs):
                if event.type == "response.completed":
                    r = event.response
            assert r is not None, "the stream ended without response.completed"
        calls, text = [], ""
        for item in r.output:
            # Everything the reply gave goes back, as Codex sends it.
            items.append(item.model_dump(exclude_none=True))
            if item.type == "function_call":
                calls.append((item.call_id, item.name, item.arguments))
            elif item.type == "message":
                text += "".join(c.text for c in item.content if c.type == "output_text")
        return calls, text

    def user_turn(q):
        items.append({"role": "user", "content": q})
        return call()

    def tool_turn(calls):
        for i, n, a in calls:
            items.append({"type": "function_call_output", "call_id": i, "output": result_of(n, a)})
        return call()

    session(f"responses {upstream} {stream}", user_turn, tool_turn)


# --- Anthropic Messages (Claude Code's dialect) -----------------------------------
def messages_session(upstream, stream):
    model = f"up-{upstream}/{MODEL}"
    tools = [{"name": n, "description": d, "input_schema": SCHEMA} for n, d in TOOLS]
    messages = []

    def call():
        kwargs = dict(model=model, max_tokens=4096, messages=messages, tools=tools,
                      thinking={"type": "enabled", "budget_tokens": 2048})
        if not stream:
            r = an.messages.create(**kwargs)
        else:
            with an.messages.stream(**kwargs) as s:
                r = s.get_final_message()
        content = [b.model_dump(exclude_none=True) for b in r.content]
        messages.append({"role": "assistant", "content": content})
        calls = [(b.id, b.name, b.input) for b in r.content if b.type == "tool_use"]
        text = "".join(b.text for b in r.content if b.type == "text")
        return calls, text

    def user_turn(q):
        messages.append({"role": "user", "content": q})
        return call()

    def tool_turn(calls):
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i, "content": result_of(n, a)} for i, n, a in calls]})
        return call()

    session(f"messages {upstream} {stream}", user_turn, tool_turn)


# --- Google Gemini (google-genai) ---------------------------------------------------
def gemini_session(upstream, stream):
    model = f"up-{upstream}/{MODEL}"
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[
            types.FunctionDeclaration(name=n, description=d, parameters_json_schema=SCHEMA) for n, d in TOOLS])],
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=2048),
    )
    contents = []

    def call():
        if not stream:
            r = gm.models.generate_content(model=model, contents=contents, config=config)
            parts = list(r.candidates[0].content.parts or [])
        else:
            parts = []
            for chunk in gm.models.generate_content_stream(model=model, contents=contents, config=config):
                if chunk.candidates and chunk.candidates[0].content and chunk.candidates[0].content.parts:
                    parts.extend(chunk.candidates[0].content.parts)
        # The model's turn goes back as the SDK gave it, signatures (bytes) and all.
        contents.append(types.Content(role="model", parts=parts))
        calls = [(p.function_call.id, p.function_call.name, p.function_call.args)
                 for p in parts if p.function_call]
        text = "".join(p.text for p in parts if p.text and not p.thought)
        return calls, text

    def user_turn(q):
        contents.append(types.Content(role="user", parts=[types.Part(text=q)]))
        return call()

    def tool_turn(calls):
        contents.append(types.Content(role="user", parts=[
            types.Part.from_function_response(name=n, response={"result": result_of(n, a)}) for _, n, a in calls]))
        return call()

    session(f"gemini {upstream} {stream}", user_turn, tool_turn)


CLIENTS = {"chat": chat_session, "responses": responses_session,
           "messages": messages_session, "gemini": gemini_session}

failures = []
for client, run in CLIENTS.items():
    for upstream in UPSTREAMS:
        for stream in (False, True):
            mode = "streamed" if stream else "whole"
            try:
                run(upstream, stream)
                print("ok", client, upstream, mode, flush=True)
            except Exception as e:  # every combination is tried; all failures are listed
                failures.append(f"{client} -> {upstream} ({mode}): {type(e).__name__}: {e}")
                print("FAIL", client, upstream, mode, "--", type(e).__name__, str(e)[:2000], flush=True)

if failures:
    print(f"{len(failures)} of 32 sessions failed", flush=True)
    sys.exit(1)
print("all ok", flush=True)
