"""The registry as data (`switchyard backends list|show --json`) and the LiteLLM hand-off."""

import json
import subprocess
import sys

import pytest

import switchyard


def test_list_gives_every_backend_with_its_key_status(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    backends = {b.name: b for b in switchyard.backends.list()}
    assert {"openai", "anthropic", "vllm", "mock", "claude-code"} <= set(backends)
    assert backends["openai"].key == "set"
    assert backends["vllm"].key == "not needed"
    assert backends["claude-code"].kind.value == "claude-code"
    assert backends["fireworks"].litellm.value == "fireworks_ai"
    assert "sk-test-not-a-real-key" not in json.dumps(backends)


def test_show_is_the_cli_json(monkeypatch):
    info = switchyard.backends.show("mock/large")
    assert info.model == "mock-large" and info.requested_model == "large"
    assert info["alias"]["value"] == "mock-large"
    assert info.endpoints.chat.url.endswith("/v1/chat/completions")
    assert info.price.value.output == 15
    # The same data the command prints.
    out = subprocess.run(
        [sys.executable, "-m", "switchyard._cli", "backends", "show", "mock/large", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == info


def test_show_takes_a_run_config_and_overrides(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(
        "backends:\n  box:\n    base_url: http://127.0.0.1:9999/v1\n    litellm: hosted_vllm\n"
        "llm:\n  planner: box/qwen\n"
    )
    info = switchyard.backends.show("box/qwen", config=config)
    assert info.base_url.value == "http://127.0.0.1:9999/v1"
    assert info.litellm == {
        "model": "hosted_vllm/qwen",
        "api_base": "http://127.0.0.1:9999/v1",
        "api_key_env": "BOX_API_KEY",
    }
    moved = switchyard.backends.show(
        "box/qwen", config=config, overrides=["backends.box.base_url=http://10.1.2.3:8000/v1"]
    )
    assert moved.litellm.api_base == "http://10.1.2.3:8000/v1"


def test_the_litellm_hand_off_of_the_built_ins(monkeypatch):
    monkeypatch.setenv("VLLM_BASE_URL", "http://gpu-box:8000/v1")
    vllm = switchyard.backends.show("vllm/Qwen/Qwen3-8B").litellm
    assert vllm.model == "hosted_vllm/Qwen/Qwen3-8B"
    assert vllm.api_base == "http://gpu-box:8000/v1"
    assert vllm.api_key_env == "VLLM_API_KEY"
    anthropic = switchyard.backends.show("anthropic/opus").litellm
    assert anthropic == {
        "model": "anthropic/claude-opus-4-5",
        "api_base": "https://api.anthropic.com",
        "api_key_env": "ANTHROPIC_API_KEY",
    }
    assert switchyard.backends.show("gemini/gemini-2.5-pro").litellm == {
        "model": "gemini/gemini-2.5-pro",
        "api_base": None,
        "api_key_env": "GEMINI_API_KEY",
    }
    assert switchyard.backends.show("together/openai/gpt-oss-120b").litellm.model == (
        "together_ai/openai/gpt-oss-120b"
    )
    # No route: None, not a guess.
    assert switchyard.backends.show("claude-code/sonnet").litellm is None


def test_the_hand_off_reaches_the_same_endpoint(mock_server):
    """What litellm.completion(model=…, api_base=…) would call: the `openai` route posts to
    `<api_base>/chat/completions` with the model id after the prefix."""
    import urllib.request

    hand_off = switchyard.backends.show("mock/echo").litellm
    prefix, model = hand_off.model.split("/", 1)
    assert prefix == "openai" and hand_off.api_base == mock_server.base_url
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(
        hand_off.api_base + "/chat/completions",
        data=body.encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert json.load(response)["choices"][0]["message"]["content"] == "hi"


def test_show_errors_are_typed():
    with pytest.raises(switchyard.UnknownBackend) as info:
        switchyard.backends.show("opneai/gpt-5")
    assert info.value.nearest == "openai"
    # A backend's name alone is shown, its model left open.
    assert switchyard.backends.show("mock").model == "{model}"


def without_times(value):
    """A check's findings without its timings (`ms`), which differ between two checks."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k != "ms"}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def test_check_probes_every_claimed_dialect_and_is_the_cli_json(mock_server):
    info = switchyard.backends.check("mock/echo")
    assert info.backend == "mock" and info.model == "echo" and info.reference == "mock/echo"
    assert info.base_url == mock_server.base_url
    assert info.key in ("set", "unset", "not needed") and info.ok
    assert info.models.listed and "echo" in info.models.ids
    by_label = {d.label: d for d in info.dialects}
    assert set(by_label) == {"chat", "responses", "responses + namespace tool", "messages", "gemini"}
    assert all(d.claimed and d.working and d.error is None for d in info.dialects)
    assert by_label["responses + namespace tool"].namespace_tool
    # The same data the command prints (the timings aside).
    out = subprocess.run(
        [sys.executable, "-m", "switchyard._cli", "backends", "check", "mock/echo", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert without_times(json.loads(out.stdout)) == without_times(info)


def test_check_reports_a_claim_that_does_not_hold_as_data(mock_server):
    info = switchyard.backends.check(
        "liar/echo",
        overrides=[
            "backends.liar.from=mock",
            f"backends.liar.base_url={mock_server.base_url}",
            # Claims messages, but its messages root is a path nothing answers on.
            f"backends.liar.messages_url={mock_server.url}/nowhere",
            "backends.liar.apis=[chat, messages]",
        ],
    )
    assert not info.ok
    by_label = {d.label: d for d in info.dialects}
    assert by_label["chat"].working is True
    assert by_label["messages"].claimed and by_label["messages"].working is False
    assert "404" in by_label["messages"].error
    assert by_label["gemini"].claimed is False and by_label["gemini"].working is None


def test_check_refuses_what_it_cannot_check():
    with pytest.raises(switchyard.UnknownBackend) as info:
        switchyard.backends.check("mokc/echo")
    assert info.value.nearest == "mock"
    with pytest.raises(switchyard.NotAReference):
        switchyard.backends.check("mock/")
    with pytest.raises(switchyard.Unsupported, match="no dialects to check"):
        switchyard.backends.check("claude-code/opus")
