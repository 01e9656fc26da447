"""What each door takes: `switchyard.llm(ref | backend, model=, overrides=, config=,
**settings)` and `Run.open(path | dict, ...)`, resolved and refused by the library's own
rules and messages."""

import pytest

import switchyard


@pytest.fixture
def no_model_env(monkeypatch):
    monkeypatch.delenv("SWITCHYARD_MODEL", raising=False)
    monkeypatch.delenv("SWITCHYARD_BACKEND", raising=False)
    return monkeypatch


# --- which model ------------------------------------------------------------------------


def test_model_keyword_names_the_model(no_model_env):
    llm = switchyard.llm(model="mock/echo")
    assert (llm.label, llm.backend, llm.model) == ("mock/echo", "mock", "echo")
    assert llm.complete("by keyword").text == "by keyword"


def test_explicit_model_wins_over_the_environment(no_model_env):
    no_model_env.setenv("SWITCHYARD_MODEL", "mock/think")
    assert switchyard.llm().label == "mock/think"
    assert switchyard.llm(model="mock/echo").label == "mock/echo"
    assert switchyard.llm("mock/echo").label == "mock/echo"


def test_the_model_environment_wins_over_the_backend_environment(no_model_env):
    no_model_env.setenv("SWITCHYARD_BACKEND", "mock")
    no_model_env.setenv("SWITCHYARD_MODEL", "mock/think")
    assert switchyard.llm().label == "mock/think"


def test_a_model_id_goes_to_the_backend_named(no_model_env):
    assert switchyard.llm("mock", model="echo").label == "mock/echo"
    assert switchyard.llm("mock", model="mock/echo").label == "mock/echo"
    no_model_env.setenv("SWITCHYARD_BACKEND", "mock")
    assert switchyard.llm(model="echo").label == "mock/echo"


def test_a_backend_named_alone_is_explicit(no_model_env):
    # The environment's model does not move a call that names its backend: the call gets
    # the backend's declared `default_model` (the built-in mock's is `echo`).
    no_model_env.setenv("SWITCHYARD_MODEL", "mock/think")
    assert switchyard.llm("mock").label == "mock/echo"


def test_a_backend_without_a_default_model_says_what_to_write(no_model_env, tmp_path):
    no_model_env.setenv("SWITCHYARD_BACKEND", "mock")
    assert switchyard.llm().label == "mock/echo"
    # `lab` declares no default model: the library's words, naming where the backend came from.
    config = {"backends": {"lab": {"base_url": "http://127.0.0.1:9", "apis": ["chat"], "auth": "none"}}}
    with pytest.raises(switchyard.ConfigError, match=r"`lab` names a backend that declares no default model: name one \(`lab/<model id>`\)"):
        switchyard.llm("lab", config=config)
    no_model_env.setenv("SWITCHYARD_BACKEND", "lab")
    with pytest.raises(switchyard.ConfigError, match=r"\(from environment variable SWITCHYARD_BACKEND\)"):
        switchyard.llm(config=config)
    no_model_env.setenv("SWITCHYARD_BACKEND", "mokc")
    with pytest.raises(switchyard.errors.UnknownBackend, match=r"no backend is called `mokc` \(did you mean `mock`\?\).*\(from environment variable SWITCHYARD_BACKEND\)"):
        switchyard.llm()


def test_no_model_at_all_says_every_way_to_name_one(no_model_env):
    with pytest.raises(switchyard.ConfigError, match="SWITCHYARD_MODEL.*SWITCHYARD_BACKEND"):
        switchyard.llm()


def test_a_model_given_twice_is_a_type_error(no_model_env):
    with pytest.raises(TypeError, match="pass one"):
        switchyard.llm("mock/echo", model="mock/think")


def test_overrides_and_config_reach_llm(no_model_env, mock_server):
    assert switchyard.llm(overrides=["model=mock/think"]).label == "mock/think"
    config = {
        "model": "local/echo",
        "backends": {"local": {"base_url": mock_server.base_url, "apis": ["chat"], "auth": "none"}},
    }
    llm = switchyard.llm(config=config)
    assert (llm.label, llm.backend) == ("local/echo", "local")
    assert llm.complete("through an inline backend").text == "through an inline backend"


def test_config_path_reaches_llm(no_model_env, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("model: mock/think\n")
    assert switchyard.llm(config=path).label == "mock/think"
    assert switchyard.llm(config=str(path), overrides=["model=mock/echo"]).label == "mock/echo"


# --- which settings ---------------------------------------------------------------------


def test_a_setting_the_backend_does_not_take_is_refused_as_in_a_run_config(tmp_path):
    with pytest.raises(switchyard.ConfigError) as by_keyword:
        switchyard.llm("mock/echo", thinking_budget=100)
    with pytest.raises(switchyard.ConfigError) as by_config:
        switchyard.Run.open({"llm": {"llm": {"model": "mock/echo", "thinking_budget": 100}}})
    message = str(by_keyword.value)
    assert "does not take `thinking_budget`" in message and "it takes: max_tokens" in message
    (problem,) = by_config.value.problems
    # The library's words: a call made by no role is not named; the config's role is.
    assert f"role `llm`: {message}" == problem["message"]


def test_settings_a_backend_takes_still_apply(mock_server):
    reply = switchyard.llm("mock/echo", max_tokens=7, temperature=0.5).complete("x")
    assert reply.text == "x"


# --- Run.open ---------------------------------------------------------------------------


def test_a_directory_holding_a_run_keeps_the_library_message(tmp_path):
    log = tmp_path / "log"
    config = tmp_path / "c.yaml"
    config.write_text(f"log: {log}\nllm:\n  planner: mock/echo\n")
    with switchyard.Run.open(config) as run:
        run.llm("planner").complete("first")
    with pytest.raises(switchyard.ConfigError, match="already holds a run.*pass --resume") as info:
        switchyard.Run.open(config)
    assert "0 problems" not in str(info.value)
    with switchyard.Run.open(config, resume=True) as run:
        assert run.llm("planner").complete("again").text == "again"


def test_run_open_takes_a_dict(tmp_path):
    log = tmp_path / "log"
    config = {"log": str(log), "llm": {"planner": {"model": "mock/echo", "max_tokens": 50}}}
    with switchyard.Run.open(config) as run:
        assert run.roles == ["planner"]
        assert run.llm("planner").complete("from a dict").text == "from a dict"
    assert (log / "run.yaml").exists()
    assert switchyard.check(config)["ok"]


def test_a_dict_config_problem_names_the_key():
    with pytest.raises(switchyard.ConfigError) as info:
        switchyard.Run.open({"llm": {"planner": {"model": "mock/echo", "max_tokenz": 5}}})
    assert "<config dict>" in str(info.value) and "max_tokenz" in str(info.value)
    with pytest.raises(TypeError, match="a path .* or a dict"):
        switchyard.Run.open(42)


def test_the_registry_functions_take_a_dict_config_too():
    config = {"backends": {"lab": {"base_url": "http://127.0.0.1:9/v1", "apis": ["chat"], "auth": "none"}}}
    info = switchyard.backends.show("lab/qwen", config=config)
    assert (info.backend, info.model) == ("lab", "qwen")
    assert "lab" in {b.name for b in switchyard.backends.list(config=config)}
