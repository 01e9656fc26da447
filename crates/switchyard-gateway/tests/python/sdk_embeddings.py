"""Drives a Switchyard gateway's embeddings with the official OpenAI and google-genai SDKs.

Usage: python sdk_embeddings.py BASE_URL

`mock/...` is passed through to the mock's /v1/embeddings; `up-gemini/...` is translated
to the mock's Gemini batchEmbedContents. The expected vectors are computed here from the
mock's documented rule (docs/mock.md, "Embeddings"). Each case prints `ok <name>`; the
first failure raises (non-zero exit).
"""

import base64
import hashlib
import struct
import sys

import openai
from google import genai
from google.genai import types

BASE = sys.argv[1].rstrip("/")
oa = openai.OpenAI(base_url=BASE + "/v1", api_key="sk-test", max_retries=0)
gm = genai.Client(
    api_key="sk-test",
    http_options=types.HttpOptions(
        base_url=BASE, api_version="v1beta",
        retry_options=types.HttpRetryOptions(attempts=1)))


def mock_vector(text, dims=8):
    out = []
    for i in range(dims):
        d = hashlib.sha256(f"{text}#{i // 32}".encode()).digest()
        out.append(int.from_bytes(d[i % 32 : i % 32 + 1], "little", signed=True) / 128)
    return out


def b64(vector):
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()


TEXTS = ["hello", "a longer text"]
# The mock's usage: ceil(chars / 4), at least one, per text.
TOKENS = sum(max(1, -(-len(t) // 4)) for t in TEXTS)

for model in ["mock/emb", "up-gemini/emb"]:
    # The SDK's default: it asks base64 and decodes the vectors itself.
    r = oa.embeddings.create(model=model, input=TEXTS)
    assert [d.embedding for d in r.data] == [mock_vector(t) for t in TEXTS], r
    assert [d.index for d in r.data] == [0, 1], r
    assert r.usage.prompt_tokens == TOKENS, r.usage
    print(f"ok default (base64 decoded by the SDK) {model}")

    r = oa.embeddings.create(model=model, input=TEXTS, encoding_format="float", dimensions=3)
    assert [d.embedding for d in r.data] == [mock_vector(t, 3) for t in TEXTS], r
    print(f"ok float {model}")

    # Asked explicitly, base64 comes back as the string itself: exact bytes.
    r = oa.embeddings.create(model=model, input="hello", encoding_format="base64", dimensions=5)
    assert r.data[0].embedding == b64(mock_vector("hello", 5)), r.data[0].embedding
    print(f"ok base64 {model}")

try:
    oa.embeddings.create(model="up-chat/emb", input="x")
    raise AssertionError("a backend without embeddings answered")
except openai.BadRequestError as e:
    assert "does not serve embeddings" in str(e), e
    print("ok refused by a backend without embeddings")

for model in ["up-gemini/emb", "mock/emb"]:
    r = gm.models.embed_content(
        model=model, contents=TEXTS,
        config=types.EmbedContentConfig(output_dimensionality=3))
    assert [e.values for e in r.embeddings] == [mock_vector(t, 3) for t in TEXTS], r
    print(f"ok google-genai embed_content {model}")

print("all ok")
