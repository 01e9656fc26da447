"""`switchyard.serve(...)`: the gateway in-process, reached with plain HTTP (urllib)."""

import json
import sqlite3
import urllib.request

import switchyard


def post(url, body, headers=None):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **(headers or {})},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.load(response)


def test_a_chat_call_through_the_gateway_to_the_mock(tmp_path):
    data = tmp_path / "data"
    with switchyard.serve(data_dir=data) as gateway:
        assert gateway.url.startswith("http://127.0.0.1:")
        assert gateway.base_url == gateway.url + "/v1"
        assert str(gateway.data_dir) == str(data)
        status, reply = post(
            gateway.base_url + "/chat/completions",
            {"model": "mock/echo", "messages": [{"role": "user", "content": "through the gateway"}]},
        )
        assert status == 200
        assert reply["choices"][0]["message"]["content"] == "through the gateway"
        # Translated: an Anthropic client reaches the same mock model.
        status, reply = post(
            gateway.url + "/v1/messages",
            {
                "model": "mock/echo",
                "max_tokens": 50,
                "messages": [{"role": "user", "content": "in messages"}],
            },
            {"anthropic-version": "2023-06-01"},
        )
        assert status == 200 and reply["content"][0]["text"] == "in messages"
    # Stopped: the port no longer answers; the calls were recorded in the store.
    try:
        urllib.request.urlopen(gateway.url + "/health", timeout=2)
        raise AssertionError("the gateway still answers after the block")
    except OSError:
        pass
    index = next(data.rglob("calls.sqlite"))
    with sqlite3.connect(index) as db:
        assert db.execute("select count(*) from llm_calls").fetchone()[0] == 2


def test_a_config_gives_the_gateway_its_models(tmp_path):
    config = tmp_path / "gateway.yaml"
    config.write_text("models:\n  fast: mock/echo\n")
    gateway = switchyard.serve(config=config)
    try:
        status, reply = post(
            gateway.base_url + "/chat/completions",
            {"model": "fast", "messages": [{"role": "user", "content": "by its gateway name"}]},
        )
        assert status == 200
        assert reply["choices"][0]["message"]["content"] == "by its gateway name"
    finally:
        gateway.stop()
    gateway.stop()  # twice: nothing


def test_a_bad_config_raises_a_config_error(tmp_path):
    config = tmp_path / "gateway.yaml"
    config.write_text("models:\n  fast: nosuch/model\n")
    try:
        switchyard.serve(config=config)
        raise AssertionError("a gateway with a model naming no backend started")
    except switchyard.ConfigError as e:
        assert "nosuch" in str(e)
