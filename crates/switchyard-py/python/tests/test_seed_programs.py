"""The package used as the seeds' programs use it: a MACE-style `make_llm` and a campaign
library's `Campaign(config, backends={...})`."""

import pytest

import switchyard


def make_llm(backend=None, model=None, **settings):
    """MACE's factory: a backend's default model, the environment's, or the one named."""
    return switchyard.llm(backend, model=model, **settings)


class Campaign:
    """A campaign library's entry point: a config dict (with its own backends) and Python
    backends by role, opened as one run."""

    def __init__(self, config, backends=None, **options):
        self.run = switchyard.Run.open(config, backends=backends or {}, **options)

    def ask(self, role, prompt):
        return self.run.llm(role).complete(prompt).text

    def close(self):
        self.run.close()


@pytest.fixture
def env(monkeypatch):
    monkeypatch.delenv("SWITCHYARD_MODEL", raising=False)
    monkeypatch.delenv("SWITCHYARD_BACKEND", raising=False)
    return monkeypatch


def test_make_llm_from_the_environment(env):
    env.setenv("SWITCHYARD_MODEL", "mock/echo")
    llm = make_llm()
    assert llm.label == "mock/echo"
    assert llm.complete("from the environment").text == "from the environment"


def test_make_llm_with_a_model_override(env):
    env.setenv("SWITCHYARD_MODEL", "mock/think")
    assert make_llm(model="mock/echo").label == "mock/echo"
    assert make_llm("mock", model="echo", max_tokens=20).complete("x").text == "x"


def test_make_llm_for_a_backend(env):
    assert make_llm("mock", model="think").label == "mock/think"
    # The backend's declared `default_model` (the built-in mock's is `echo`).
    assert make_llm("mock").label == "mock/echo"
    assert make_llm("mock").complete("by default").text == "by default"
    env.setenv("SWITCHYARD_BACKEND", "mock")
    assert make_llm().label == "mock/echo"


def test_make_llm_refuses_a_setting_as_a_run_config_does(env):
    with pytest.raises(switchyard.ConfigError, match="does not take `thinking_budget`"):
        make_llm(model="mock/echo", thinking_budget=100)


class Critic:
    def __init__(self):
        self.prompts = []

    def complete(self, request):
        self.prompts.append(request.prompt)
        return f"looks fine: {request.prompt}"


def test_a_campaign_with_inline_backends_and_a_python_role(tmp_path, mock_server):
    critic = Critic()
    config = {
        "log": tmp_path / "campaign",  # a Path, as such programs hold them
        "backends": {"lab": {"base_url": mock_server.base_url, "apis": ["chat"], "auth": "none"}},
        "llm": {
            "planner": {"model": "lab/think", "max_tokens": 200},
            "proposer": "lab/echo",
            "critic": "mock/small",
        },
        "budget": {"max_calls": 10},
    }
    campaign = Campaign(config, backends={"critic": critic})
    try:
        assert campaign.ask("proposer", "try x") == "try x"
        assert campaign.ask("planner", "plan it")
        assert campaign.ask("critic", "try x") == "looks fine: try x"
    finally:
        campaign.close()
    assert critic.prompts == ["try x"]
    assert (tmp_path / "campaign" / "run.yaml").exists()
