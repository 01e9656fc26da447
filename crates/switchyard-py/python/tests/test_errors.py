"""Every exception class, raised by the matching mock fault or refusal."""

import pytest

import switchyard


@pytest.mark.parametrize(
    "model, cls, status",
    [
        ("fault-429", switchyard.RateLimited, 429),
        ("quota", switchyard.ProviderQuotaExhausted, 429),
        ("fault-401", switchyard.AuthError, 401),
        ("fault-403", switchyard.AuthError, 403),
        ("fault-400", switchyard.BadRequest, 400),
        ("fault-503", switchyard.Overloaded, 503),
        ("fault-529", switchyard.Overloaded, 529),
        ("fault-500", switchyard.ProviderError, 500),
    ],
)
def test_provider_faults(model, cls, status):
    llm = switchyard.llm(f"mock/{model}", retry=False)
    with pytest.raises(cls) as info:
        llm.complete("x")
    e = info.value
    assert isinstance(e, switchyard.Error)
    assert e.status == status and e.kind == cls.kind
    assert e.body and e.request_id


def test_rate_limited_is_waited_out_then_answered():
    # The handle's schedule shortened to 10 ms, as a role's `retry:` setting would be.
    llm = switchyard.llm("mock/fault-429-then-ok", retry={"rate_limited": [0.01]})
    reply = llm.complete("patience")
    assert reply.text == "patience"
    assert [a["status"] for a in reply.attempts] == [429, None]


def test_context_overflow_carries_its_numbers():
    with pytest.raises(switchyard.ContextOverflow) as info:
        switchyard.llm("mock/context-overflow").complete("x")
    assert info.value.limit == 8192 and info.value.prompt_tokens == 9000


def test_a_malformed_reply():
    with pytest.raises(switchyard.ProviderReplyMalformed) as info:
        switchyard.llm("mock/null-body", retry=False).complete("x")
    assert info.value.reason and info.value.body == b"null"


def test_a_timeout():
    with pytest.raises(switchyard.Timeout) as info:
        switchyard.llm("mock/hang", timeout_seconds=0.2).complete("x")
    assert info.value.phase == "total"


def test_transport(monkeypatch):
    monkeypatch.setenv("MOCK_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(switchyard.Transport):
        switchyard.llm("mock/echo").complete("x")


def test_unknown_backend_names_the_nearest():
    with pytest.raises(switchyard.UnknownBackend) as info:
        switchyard.llm("mokc/echo")
    assert info.value.nearest == "mock" and "mock" in info.value.known


def test_not_a_reference():
    with pytest.raises(switchyard.NotAReference):
        switchyard.llm("mock/")


def test_missing_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(switchyard.MissingKey) as info:
        switchyard.llm("openai/gpt-5")
    assert info.value.variable == "OPENAI_API_KEY"
    assert isinstance(info.value, switchyard.ConfigError)


def test_a_config_error_has_file_line_and_column(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("llm:\n  planner: {model: mock/echo, max_tokenz: 3}\n")
    with pytest.raises(switchyard.ConfigError) as info:
        switchyard.Run.open(config)
    e = info.value
    assert e.file == str(config) and e.line == 2 and e.column
    assert e.problems and "max_tokenz" in e.problems[0]["message"]


def test_a_key_written_in_the_config_is_refused(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(
        "backends:\n  mine:\n    base_url: http://127.0.0.1:9/v1\n    api_key: sk-abcdefghijklmnopqrstuvwxyz123456\n"
        "llm:\n  planner: mine/m\n"
    )
    with pytest.raises(switchyard.ConfigError) as info:
        switchyard.Run.open(config)
    assert "sk-abcdefghijklmnopqrstuvwxyz123456" not in str(info.value)


def test_budget_exceeded(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("llm:\n  planner: mock/echo\nbudget: {max_calls: 1}\nunknown_cost: allow\n")
    planner = switchyard.Run.open(config).llm("planner")
    planner.complete("one")
    with pytest.raises(switchyard.BudgetExceeded) as info:
        planner.complete("two")
    assert info.value.limit == "max_calls"


def test_an_unknown_role_is_a_config_error(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("llm:\n  planner: mock/echo\n")
    with pytest.raises(switchyard.ConfigError, match="did you mean `planner`"):
        switchyard.Run.open(config).llm("planer")
