"""The official SDKs' clients pointed at a Switchyard gateway, as every script here makes them:
no retries of their own (a test sees what the gateway answered), a key the gateway ignores."""

import anthropic
import openai
from google import genai
from google.genai import types


def clients(base):
    """(OpenAI, Anthropic, Google GenAI) clients of the gateway at `base`."""
    base = base.rstrip("/")
    oa = openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0)
    an = anthropic.Anthropic(base_url=base, api_key="sk-test", max_retries=0)
    # google-genai joins base_url, api_version and `models/<model>:<method>`.
    gm = genai.Client(
        api_key="sk-test",
        http_options=types.HttpOptions(
            base_url=base, api_version="v1beta",
            retry_options=types.HttpRetryOptions(attempts=1)))
    return oa, an, gm
