"""The official OpenAI Python SDK through a route of the gateway.

Usage: python sdk_routes.py BASE_URL

The gateway's route `fallback` tries a member answering 503, then one answering 429,
then `up-messages/echo` (Anthropic Messages, so the answer is translated for every client
but the Anthropic one); `smart` names it in the gateway's `models:` table. The OpenAI
SDK (chat and Responses), the Anthropic SDK and the Google GenAI SDK call both, whole and
streamed. Each case prints `ok <name>`; the first failure raises (non-zero exit).
"""

import sys

from sdk_connect import clients

oa, an, gm = clients(sys.argv[1])


def check(name, got, want):
    if got != want:
        raise AssertionError(f"{name}: got {got!r}, want {want!r}")
    print(f"ok {name}")


for model in ["fallback", "smart"]:
    raw = oa.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": f"chat {model}"}])
    r = raw.parse()
    check(f"chat whole {model}", r.choices[0].message.content, f"chat {model}")
    # The reply names the model as the client named it; the member that served is named
    # by the gateway's header.
    check(f"chat model {model}", r.model, model)
    check(f"chat served by {model}", raw.headers.get("x-switchyard-model"), "up-messages/echo")

    chunks = oa.chat.completions.create(
        model=model, messages=[{"role": "user", "content": f"stream {model}"}], stream=True,
        stream_options={"include_usage": True})
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check(f"chat stream {model}", text, f"stream {model}")

    r = oa.responses.create(model=model, input=f"responses {model}")
    check(f"responses whole {model}", r.output_text, f"responses {model}")
    check(f"responses model {model}", r.model, model)

    text = ""
    with oa.responses.stream(model=model, input=f"rstream {model}") as s:
        for event in s:
            if event.type == "response.output_text.delta":
                text += event.delta
    check(f"responses stream {model}", text, f"rstream {model}")

    m = an.messages.create(model=model, max_tokens=64,
                           messages=[{"role": "user", "content": f"messages {model}"}])
    check(f"messages whole {model}", m.content[0].text, f"messages {model}")
    check(f"messages model {model}", m.model, model)
    with an.messages.stream(model=model, max_tokens=64,
                            messages=[{"role": "user", "content": f"mstream {model}"}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    check(f"messages stream {model}", text, f"mstream {model}")
    check(f"messages stream model {model}", final.model, model)

    g = gm.models.generate_content(model=model, contents=f"gemini {model}")
    check(f"gemini whole {model}", g.text, f"gemini {model}")
    check(f"gemini model {model}", g.model_version, model)
    text = "".join(c.text or "" for c in gm.models.generate_content_stream(
        model=model, contents=f"gstream {model}"))
    check(f"gemini stream {model}", text, f"gstream {model}")

print("all ok")
