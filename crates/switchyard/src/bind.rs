//! Binding a coding CLI to a backend: the environment and arguments that point Claude Code
//! or Codex at any backend serving its dialect, computed as data so that `switchyard bind`
//! can both run the CLI and print a command a shell can paste.
//!
//! A key is never part of a [`Binding`]: the variable that holds it is. Its value is read
//! only by [`Binding::child_env`], for the environment of the CLI actually started.
//!
//! ```
//! use switchyard::bind::{bind, Agent};
//! use switchyard::env::MapEnv;
//! use switchyard::registry::Registry;
//!
//! let env = MapEnv::new([("DEEPSEEK_API_KEY", "sk-not-a-real-key")]);
//! let registry = Registry::builtin().unwrap();
//! let b = bind(Agent::Claude, &registry, "deepseek/deepseek-chat", &[], &env).unwrap();
//! let shell = b.shell_command("claude");
//! assert!(shell.contains(r#"ANTHROPIC_AUTH_TOKEN="$DEEPSEEK_API_KEY""#));
//! assert!(!shell.contains("sk-not-a-real-key"));
//! ```

use crate::env::EnvSource;
use crate::error::{Error, Result};
use crate::registry::{self, Auth, Kind, Registry};
use switchyard_wire::Dialect;

/// A coding CLI that can be bound to a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code (`claude`), which speaks `messages`.
    Claude,
    /// Codex (`codex`), which speaks `responses`.
    Codex,
}

impl Agent {
    /// The dialect the CLI speaks.
    pub fn dialect(self) -> Dialect {
        match self {
            Agent::Claude => Dialect::Messages,
            Agent::Codex => Dialect::Responses,
        }
    }

    /// The CLI's name for people.
    pub fn title(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
        }
    }

    /// The word used on the command line (`claude`, `codex`).
    pub fn word(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }

    /// The backend kind that runs this CLI (whose `command` field locates it).
    pub fn kind(self) -> Kind {
        match self {
            Agent::Claude => Kind::ClaudeCode,
            Agent::Codex => Kind::Codex,
        }
    }
}

/// The value of a variable in the CLI's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// This text.
    Text(String),
    /// The value of another variable: the backend's key variable. Printed as
    /// `"$VARIABLE"`, read only for the CLI actually started.
    KeyOf(String),
}

/// The environment and arguments that bind a CLI to a backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The CLI.
    pub agent: Agent,
    /// The backend.
    pub backend: String,
    /// The model id on the backend (after aliases).
    pub model: String,
    /// Variables to set, in order.
    pub env: Vec<(String, EnvValue)>,
    /// Variables to remove (a key of another provider that the CLI would also send).
    pub unset: Vec<String>,
    /// Switchyard's arguments for the CLI (Codex's `-c` settings), in pairs where a flag
    /// takes a value.
    pub args: Vec<String>,
    /// The user's arguments, which come after Switchyard's (so the user's settings win).
    pub user_args: Vec<String>,
}

/// Every variable through which Claude Code picks a model, each set to the bound model
/// so that no alias it resolves (`opus`, `sonnet`, `haiku`, `fable`, its small fast model,
/// its subagents') reaches a model the backend does not serve.
pub const CLAUDE_MODEL_VARS: &[&str] = &[
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_DEFAULT_FABLE_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
];

/// The placeholder key given to Claude Code for a server that needs none (without a key
/// Claude Code asks for a login).
pub const NO_KEY_PLACEHOLDER: &str = "switchyard-no-key";

/// Codex's own provider ids, which a configuration cannot redefine.
const CODEX_RESERVED_PROVIDERS: &[&str] = &["openai", "oss", "ollama", "lmstudio", "ollama-chat"];

/// Binds `agent` to the backend and model of `reference`, with `user_args` after
/// Switchyard's own arguments. Fails when the backend is not an HTTP endpoint, does not
/// serve the CLI's dialect (then [`bind_through_gateway`] is the way), or needs a key whose
/// variable is unset.
pub fn bind(
    agent: Agent,
    registry: &Registry,
    reference: &str,
    user_args: &[String],
    env: &dyn EnvSource,
) -> Result<Binding> {
    bind_with(agent, registry, reference, user_args, env, true)
}

/// [`bind`] for a command that is printed, not run: the key is written as its variable
/// (`"$DEEPSEEK_API_KEY"`), never read, so an unset key is no error (the shell that runs
/// the command must have it).
pub fn bind_to_print(
    agent: Agent,
    registry: &Registry,
    reference: &str,
    user_args: &[String],
    env: &dyn EnvSource,
) -> Result<Binding> {
    bind_with(agent, registry, reference, user_args, env, false)
}

fn bind_with(
    agent: Agent,
    registry: &Registry,
    reference: &str,
    user_args: &[String],
    env: &dyn EnvSource,
    needs_key_now: bool,
) -> Result<Binding> {
    if registry.route(reference).is_some() {
        return Err(Error::Unsupported(format!(
            "`{reference}` is a route: {} reaches its members through the gateway (`switchyard bind` starts or finds one; see bind_through_gateway)",
            agent.title()
        )));
    }
    let (backend, model) = http_backend(agent, registry, reference)?;
    let dialect = agent.dialect();
    if !backend.serves(dialect) {
        return Err(dialect_missing(agent, backend, &model));
    }
    let edits = backend.body_edits(dialect);
    if !edits.is_empty() {
        return Err(edits_missing(agent, backend, &model, &edits));
    }
    let url = backend
        .endpoint(dialect, &model, false, env)
        .map_err(|e| Error::Config(e.to_string()))?;
    let key = match backend.api_key(env) {
        Ok(key) => key.is_some(),
        Err(registry::EndpointError::MissingKey { variable, .. }) if !needs_key_now => {
            !variable.is_empty()
        }
        Err(registry::EndpointError::MissingKey { backend, variable }) => {
            return Err(Error::MissingKey { backend, variable })
        }
        Err(other) => return Err(Error::Config(other.to_string())),
    };
    let host = url.host_str().unwrap_or("");
    let url = url.as_str();
    let target = Target {
        // Claude Code appends `/v1/messages` to ANTHROPIC_BASE_URL; Codex `/responses`.
        base: match agent {
            Agent::Claude => url.strip_suffix("/v1/messages").unwrap_or(url),
            Agent::Codex => url.strip_suffix("/responses").unwrap_or(url),
        },
        key_var: key.then(|| backend.api_key_env.value.clone()),
        x_api_key: backend.auth.value == Auth::XApiKey,
        vendor_host: match agent {
            Agent::Claude => host == "api.anthropic.com",
            Agent::Codex => host == "api.openai.com",
        },
        context_window: backend.context_window.as_ref().map(|w| w.value),
        provider_id: codex_provider_id(&backend.name),
        provider_name: &backend.name,
        gateway: false,
    };
    Ok(binding(agent, &backend.name, model, user_args, &target))
}

/// True when `reference` names an HTTP backend that does not serve `agent`'s dialect, so
/// the CLI can only reach it through the gateway (see [`bind_through_gateway`]). Errors
/// as [`bind`] does for an unknown reference or a backend that is not HTTP.
pub fn needs_gateway(agent: Agent, registry: &Registry, reference: &str) -> Result<bool> {
    // A CLI reaches one base URL: a route's members are followed by the gateway, which
    // translates the CLI's dialect for each member that lacks it.
    if let Some(route) = registry.route(reference) {
        route_members(agent, registry, route)?;
        return Ok(true);
    }
    let (backend, _) = http_backend(agent, registry, reference)?;
    Ok(gateway_reason(agent, backend).is_some())
}

/// Why `agent` reaches `backend` only through the gateway, in words for a message: the
/// backend does not serve the CLI's dialect, or its request encoding changes what the CLI
/// would send (`developer_role: system`, `extra_body`…), which only the gateway applies.
/// `None` when the CLI can be pointed at the backend itself.
pub fn gateway_reason(agent: Agent, backend: &registry::Backend) -> Option<String> {
    let dialect = agent.dialect();
    if !backend.serves(dialect) {
        return Some(format!(
            "backend `{}` does not serve `{dialect}`, which {} speaks",
            backend.name,
            agent.title()
        ));
    }
    let edits = backend.body_edits(dialect);
    (!edits.is_empty()).then(|| {
        format!(
            "backend `{}` has {}, which the gateway applies to what {} sends",
            backend.name,
            edits.join(" and "),
            agent.title()
        )
    })
}

/// The Codex provider id of a Switchyard gateway.
pub const GATEWAY_PROVIDER: &str = "switchyard";

/// Binds `agent` to `reference` through the Switchyard gateway at `gateway_url`
/// (`http://127.0.0.1:8080`), which translates the CLI's dialect to one the backend serves.
/// The model the CLI sends is the whole reference (`vllm/qwen3`), which the gateway routes.
/// The CLI gets no key: the gateway reads the backend's key itself (the binding removes that
/// variable from the CLI's environment), and a gateway without client keys takes the
/// placeholder (Claude Code) or no credential (Codex) on loopback.
///
/// ```
/// use switchyard::bind::{bind_through_gateway, Agent, EnvValue};
/// use switchyard::registry::Registry;
///
/// let registry = Registry::builtin().unwrap();
/// let b = bind_through_gateway(Agent::Claude, &registry, "groq/llama-3.3-70b-versatile",
///     &[], "http://127.0.0.1:8080").unwrap();
/// assert_eq!(b.var("ANTHROPIC_BASE_URL"), Some(&EnvValue::Text("http://127.0.0.1:8080".into())));
/// assert_eq!(b.var("ANTHROPIC_MODEL"), Some(&EnvValue::Text("groq/llama-3.3-70b-versatile".into())));
/// ```
pub fn bind_through_gateway(
    agent: Agent,
    registry: &Registry,
    reference: &str,
    user_args: &[String],
    gateway_url: &str,
) -> Result<Binding> {
    if let Some(route) = registry.route(reference) {
        return bind_route(agent, registry, route, user_args, gateway_url);
    }
    let (backend, model) = http_backend(agent, registry, reference)?;
    let root = gateway_url.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    let base = match agent {
        Agent::Claude => root.to_string(),
        Agent::Codex => format!("{root}/v1"),
    };
    let target = Target {
        base: &base,
        key_var: None,
        x_api_key: false,
        vendor_host: false,
        context_window: backend.context_window.as_ref().map(|w| w.value),
        provider_id: GATEWAY_PROVIDER.to_string(),
        provider_name: GATEWAY_PROVIDER,
        gateway: true,
    };
    // The reference after aliases, which the gateway resolves to the same backend and model.
    let routed = format!("{}/{model}", backend.name);
    let mut b = binding(agent, &backend.name, routed, user_args, &target);
    if !backend.uses_no_key() && !backend.api_key_env.value.is_empty() {
        // The backend's key is the gateway's to send: the CLI does not inherit it.
        b.unset.push(backend.api_key_env.value.clone());
    }
    Ok(b)
}

/// Every member of `route` as an HTTP backend and model (the gateway calls none other).
fn route_members<'r>(
    agent: Agent,
    registry: &'r Registry,
    route: &registry::Route,
) -> Result<Vec<(&'r registry::Backend, String)>> {
    route
        .members
        .iter()
        .map(|m| {
            http_backend(agent, registry, &m.reference).map_err(|e| {
                Error::Unsupported(format!(
                    "route `{}`: member `{}`: {e}",
                    route.name, m.reference
                ))
            })
        })
        .collect()
}

/// [`bind_through_gateway`] for a route: the CLI sends the route's name, the gateway
/// follows it; the CLI is told the smallest context window of the members and gets none
/// of their keys.
fn bind_route(
    agent: Agent,
    registry: &Registry,
    route: &registry::Route,
    user_args: &[String],
    gateway_url: &str,
) -> Result<Binding> {
    let members = route_members(agent, registry, route)?;
    let root = gateway_url.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    let base = match agent {
        Agent::Claude => root.to_string(),
        Agent::Codex => format!("{root}/v1"),
    };
    let target = Target {
        base: &base,
        key_var: None,
        x_api_key: false,
        vendor_host: false,
        context_window: members
            .iter()
            .filter_map(|(b, _)| b.context_window.as_ref().map(|w| w.value))
            .min(),
        provider_id: GATEWAY_PROVIDER.to_string(),
        provider_name: GATEWAY_PROVIDER,
        gateway: true,
    };
    let mut b = binding(agent, &route.name, route.name.clone(), user_args, &target);
    for (backend, _) in &members {
        let var = &backend.api_key_env.value;
        if !backend.uses_no_key() && !var.is_empty() && !b.unset.contains(var) {
            b.unset.push(var.clone());
        }
    }
    Ok(b)
}

/// Resolves `reference` to an HTTP backend and the model id on it (after aliases).
fn http_backend<'r>(
    agent: Agent,
    registry: &'r Registry,
    reference: &str,
) -> Result<(&'r registry::Backend, String)> {
    // A backend named alone (`mock`) is its default model, as at every door.
    let completed = crate::run::default_reference(registry, reference)
        .ok_or_else(|| Error::Config(crate::run::no_default_model(reference)))?;
    let r = registry.require_reference(&completed)?;
    let backend = registry
        .backend(&r.backend)
        .ok_or_else(|| Error::Config(format!("backend `{}` vanished", r.backend)))?;
    if backend.kind.value != Kind::Http {
        return Err(Error::Unsupported(format!(
            "backend `{}` is of kind `{}`: {} can only be bound to an http backend (an \
             endpoint it can send requests to)",
            backend.name,
            backend.kind.value,
            agent.title()
        )));
    }
    Ok((backend, r.model))
}

/// Where a binding points the CLI: the same settings whether at a backend or a gateway.
struct Target<'a> {
    /// The URL the CLI appends its path to (Claude Code: `/v1/messages`; Codex: `/responses`).
    base: &'a str,
    /// The variable holding the key, when there is one.
    key_var: Option<String>,
    /// The server takes the key as `x-api-key` (Anthropic's own API).
    x_api_key: bool,
    /// The CLI's own vendor (Anthropic for Claude Code, OpenAI for Codex): keeps its extras.
    vendor_host: bool,
    /// The backend's declared context window.
    context_window: Option<u64>,
    /// Codex's provider id and display name.
    provider_id: String,
    provider_name: &'a str,
    /// The CLI talks to a Switchyard gateway (Claude Code gets the gateway hygiene variables).
    gateway: bool,
}

fn binding(
    agent: Agent,
    backend: &str,
    model: String,
    user_args: &[String],
    target: &Target,
) -> Binding {
    let mut b = Binding {
        agent,
        backend: backend.to_string(),
        model,
        env: Vec::new(),
        unset: Vec::new(),
        args: Vec::new(),
        user_args: user_args.to_vec(),
    };
    match agent {
        Agent::Claude => claude(&mut b, target),
        Agent::Codex => codex(&mut b, target),
    }
    b
}

fn claude(b: &mut Binding, t: &Target) {
    let text = |s: &str| EnvValue::Text(s.to_string());
    b.env.push(("ANTHROPIC_BASE_URL".into(), text(t.base)));
    // A backend taking `x-api-key` (Anthropic's own API) gets ANTHROPIC_API_KEY, which
    // Claude Code sends that way; every other gets the key as a bearer token. The other
    // variable is removed so that a key meant for one provider never goes to another.
    let (set, unset) = if t.x_api_key {
        ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    } else {
        ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY")
    };
    b.unset.push(unset.to_string());
    b.env.push((
        set.to_string(),
        match &t.key_var {
            Some(var) => EnvValue::KeyOf(var.clone()),
            None => text(NO_KEY_PLACEHOLDER),
        },
    ));
    for var in CLAUDE_MODEL_VARS {
        b.env.push((var.to_string(), text(&b.model)));
    }
    if !t.vendor_host {
        b.env
            .push(("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), text("1")));
    }
    if t.gateway {
        // Experimental beta fields have no equivalent in the dialects the gateway translates
        // to, and the per-conversation attribution block Claude Code puts at `system[0]`
        // defeats the upstream's prefix caching.
        b.env
            .push(("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS".into(), text("1")));
        b.env
            .push(("CLAUDE_CODE_ATTRIBUTION_HEADER".into(), text("0")));
    }
    if let Some(window) = t.context_window {
        b.env.push((
            "CLAUDE_CODE_MAX_CONTEXT_TOKENS".into(),
            text(&window.to_string()),
        ));
    }
}

fn codex(b: &mut Binding, t: &Target) {
    let id = &t.provider_id;
    let mut set = |key: &str, value: String| {
        b.args.push("-c".into());
        b.args.push(format!("{key}={value}"));
    };
    let prefix = format!("model_providers.{id}");
    set("model_provider", toml_string(id));
    set("model", toml_string(&b.model));
    set(&format!("{prefix}.name"), toml_string(t.provider_name));
    set(&format!("{prefix}.base_url"), toml_string(t.base));
    set(&format!("{prefix}.wire_api"), toml_string("responses"));
    if let Some(var) = &t.key_var {
        // Codex reads the key from this variable itself and sends it as a bearer token.
        set(&format!("{prefix}.env_key"), toml_string(var));
    }
    if let Some(window) = t.context_window {
        set("model_context_window", window.to_string());
    }
    if !t.vendor_host {
        // Codex's hosted web search tool exists only on OpenAI.
        set("web_search", toml_string("disabled"));
    }
}

/// The Codex provider id for a backend: its name, unless Codex reserves that name.
pub fn codex_provider_id(backend: &str) -> String {
    if CODEX_RESERVED_PROVIDERS.contains(&backend) {
        format!("switchyard-{backend}")
    } else {
        backend.to_string()
    }
}

fn dialect_missing(agent: Agent, backend: &registry::Backend, model: &str) -> Error {
    let dialect = agent.dialect();
    let served = backend
        .apis
        .value
        .iter()
        .map(|d| d.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let name = &backend.name;
    Error::Unsupported(format!(
        "backend `{name}` does not serve the `{dialect}` dialect, which {title} speaks (it \
         serves: {served}). Bind through Switchyard's gateway, which translates between \
         dialects: `switchyard bind {word} {name}/{model}` uses a running gateway \
         (`switchyard serve`, at $SWITCHYARD_GATEWAY_URL or http://127.0.0.1:8080) or starts \
         one for the session (from a program: `switchyard::bind::bind_through_gateway`)",
        title = agent.title(),
        word = agent.word(),
    ))
}

fn edits_missing(agent: Agent, backend: &registry::Backend, model: &str, edits: &[&str]) -> Error {
    let name = &backend.name;
    Error::Unsupported(format!(
        "backend `{name}` has {}, which changes every `{dialect}` request before it is sent; \
         {title} sends its requests itself, so it goes through Switchyard's gateway, which \
         applies them: `switchyard bind {word} {name}/{model}` uses a running gateway \
         (`switchyard serve`, at $SWITCHYARD_GATEWAY_URL or http://127.0.0.1:8080) or starts \
         one for the session (from a program: `switchyard::bind::bind_through_gateway`)",
        edits.join(" and "),
        dialect = agent.dialect(),
        title = agent.title(),
        word = agent.word(),
    ))
}

/// `value` as a TOML basic string (`"…"`, with `\` and `"` escaped).
pub fn toml_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` quoted for a POSIX shell: unchanged when it is only safe characters, else in
/// single quotes (a `'` inside written `'\''`).
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl Binding {
    /// Every argument of the CLI: Switchyard's, then the user's.
    pub fn all_args(&self) -> Vec<String> {
        self.args.iter().chain(&self.user_args).cloned().collect()
    }

    /// One command a POSIX shell can paste, one setting a line: `env -u … NAME=value …
    /// <program> -c … <user args>`, the key written as `"$VARIABLE"` so that the pasting
    /// shell fills it in. `program` may be followed by `leading` arguments (a `command`
    /// such as `npx -y @openai/codex`).
    pub fn shell_command(&self, program: &str) -> String {
        self.shell_command_with(program, &[])
    }

    /// [`shell_command`](Self::shell_command) with arguments right after the program.
    pub fn shell_command_with(&self, program: &str, leading: &[String]) -> String {
        let mut lines = Vec::new();
        if !self.unset.is_empty() || !self.env.is_empty() {
            lines.push("env".to_string());
        }
        for name in &self.unset {
            lines.push(format!("-u {name}"));
        }
        for (name, value) in &self.env {
            lines.push(match value {
                EnvValue::Text(t) => format!("{name}={}", shell_quote(t)),
                EnvValue::KeyOf(var) => format!("{name}=\"${var}\""),
            });
        }
        let words = |items: &[String]| {
            items
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut first = shell_quote(program);
        if !leading.is_empty() {
            first = format!("{first} {}", words(leading));
        }
        lines.push(first);
        // Flag and value on one line (`-c 'key="value"'`).
        let mut i = 0;
        while i < self.args.len() {
            let end = if self.args[i].starts_with('-') && i + 1 < self.args.len() {
                i + 2
            } else {
                i + 1
            };
            lines.push(words(&self.args[i..end]));
            i = end;
        }
        if !self.user_args.is_empty() {
            lines.push(words(&self.user_args));
        }
        lines.join(" \\\n  ")
    }

    /// The variables to set in the started CLI's environment: the resolved environment's
    /// own (an env file's, which the CLI would not inherit; [`EnvSource::explicit_vars`])
    /// but those the binding removes or sets, then the binding's, the key's value read from
    /// `env`. The only place a key's value is taken.
    pub fn child_env(&self, env: &dyn EnvSource) -> Result<Vec<(String, String)>> {
        let inherited = env.explicit_vars().into_iter().filter(|(name, _)| {
            !self.unset.contains(name) && !self.env.iter().any(|(set, _)| set == name)
        });
        let own = self
            .env
            .iter()
            .map(|(name, value)| match value {
                EnvValue::Text(t) => Ok((name.clone(), t.clone())),
                EnvValue::KeyOf(var) => env
                    .var(var)
                    .inspect(|v| crate::internal::redact::register(v, &format!("the key in {var}")))
                    .map(|v| (name.clone(), v))
                    .ok_or_else(|| Error::MissingKey {
                        backend: self.backend.clone(),
                        variable: var.clone(),
                    }),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(inherited.chain(own).collect())
    }

    /// The value of a variable the binding sets, if it sets it (for tests and display).
    pub fn var(&self, name: &str) -> Option<&EnvValue> {
        self.env.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MapEnv;
    use crate::registry::{Config, LoadOptions};

    fn registry(overrides: &[&str]) -> Registry {
        let env = MapEnv::default();
        let mut opts = LoadOptions::new(&env);
        opts.user_file = false;
        opts.overrides = overrides.iter().map(|s| s.to_string()).collect();
        Config::load(&opts).unwrap().registry
    }

    const FAKE: &str = "sk-fake-0123456789abcdefghij";

    #[test]
    fn claude_on_a_keyed_hosted_backend() {
        let env = MapEnv::new([("DEEPSEEK_API_KEY", FAKE)]);
        let b = bind(
            Agent::Claude,
            &registry(&[]),
            "deepseek/deepseek-chat",
            &["--verbose".into()],
            &env,
        )
        .unwrap();
        let text = |s: &str| Some(EnvValue::Text(s.into()));
        assert_eq!(
            b.var("ANTHROPIC_BASE_URL"),
            text("https://api.deepseek.com/anthropic").as_ref()
        );
        assert_eq!(
            b.var("ANTHROPIC_AUTH_TOKEN"),
            Some(&EnvValue::KeyOf("DEEPSEEK_API_KEY".into()))
        );
        for v in [
            "ANTHROPIC_MODEL",
            "ANTHROPIC_DEFAULT_OPUS_MODEL",
            "ANTHROPIC_DEFAULT_SONNET_MODEL",
            "ANTHROPIC_DEFAULT_HAIKU_MODEL",
            "ANTHROPIC_DEFAULT_FABLE_MODEL",
            "CLAUDE_CODE_SUBAGENT_MODEL",
        ] {
            assert_eq!(b.var(v), text("deepseek-chat").as_ref(), "{v}");
        }
        assert_eq!(
            b.var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"),
            text("1").as_ref()
        );
        assert_eq!(
            b.var("CLAUDE_CODE_MAX_CONTEXT_TOKENS"),
            text("128000").as_ref()
        );
        assert_eq!(b.unset, vec!["ANTHROPIC_API_KEY".to_string()]);
        assert!(b.var("CLAUDE_CODE_ATTRIBUTION_HEADER").is_none());
        assert!(b.args.is_empty());
        assert_eq!(b.user_args, vec!["--verbose".to_string()]);
        let shell = b.shell_command("claude");
        assert!(!shell.contains(FAKE));
        let child = b.child_env(&env).unwrap();
        assert!(child.contains(&("ANTHROPIC_AUTH_TOKEN".into(), FAKE.into())));
    }

    #[test]
    fn claude_on_anthropic_uses_the_api_key_variable_and_keeps_traffic() {
        let env = MapEnv::new([("ANTHROPIC_API_KEY", FAKE)]);
        let b = bind(Agent::Claude, &registry(&[]), "anthropic/opus", &[], &env).unwrap();
        assert_eq!(
            b.var("ANTHROPIC_API_KEY"),
            Some(&EnvValue::KeyOf("ANTHROPIC_API_KEY".into()))
        );
        assert_eq!(
            b.var("ANTHROPIC_MODEL"),
            Some(&EnvValue::Text("claude-opus-4-5".into()))
        );
        assert!(b.var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC").is_none());
        assert_eq!(b.unset, vec!["ANTHROPIC_AUTH_TOKEN".to_string()]);
    }

    #[test]
    fn codex_settings_come_before_the_users() {
        let env = MapEnv::new([("DEEPSEEK_API_KEY", FAKE)]);
        let user = vec!["-c".to_string(), "model_context_window=64000".to_string()];
        let b = bind(
            Agent::Codex,
            &registry(&[]),
            "deepseek/deepseek-chat",
            &user,
            &env,
        )
        .unwrap();
        assert_eq!(
            b.args,
            vec![
                "-c",
                "model_provider=\"deepseek\"",
                "-c",
                "model=\"deepseek-chat\"",
                "-c",
                "model_providers.deepseek.name=\"deepseek\"",
                "-c",
                "model_providers.deepseek.base_url=\"https://api.deepseek.com\"",
                "-c",
                "model_providers.deepseek.wire_api=\"responses\"",
                "-c",
                "model_providers.deepseek.env_key=\"DEEPSEEK_API_KEY\"",
                "-c",
                "model_context_window=128000",
                "-c",
                "web_search=\"disabled\"",
            ]
        );
        assert_eq!(
            b.all_args()[b.args.len()..],
            ["-c".to_string(), "model_context_window=64000".to_string()]
        );
        assert!(b.env.is_empty());
    }

    #[test]
    fn codex_on_openai_keeps_web_search_and_a_free_provider_id() {
        let env = MapEnv::new([("OPENAI_API_KEY", FAKE)]);
        let b = bind(Agent::Codex, &registry(&[]), "openai/gpt-5", &[], &env).unwrap();
        assert!(b
            .args
            .contains(&"model_provider=\"switchyard-openai\"".to_string()));
        assert!(!b.args.iter().any(|a| a.starts_with("web_search")));
    }

    #[test]
    fn keyless_servers_get_a_placeholder_or_no_env_key() {
        let env = MapEnv::default();
        let b = bind(Agent::Claude, &registry(&[]), "vllm/qwen", &[], &env).unwrap();
        assert_eq!(
            b.var("ANTHROPIC_AUTH_TOKEN"),
            Some(&EnvValue::Text(NO_KEY_PLACEHOLDER.into()))
        );
        assert_eq!(
            b.var("ANTHROPIC_BASE_URL"),
            Some(&EnvValue::Text("http://127.0.0.1:8000".into()))
        );
        assert!(b.var("CLAUDE_CODE_MAX_CONTEXT_TOKENS").is_none());
        let b = bind(Agent::Codex, &registry(&[]), "vllm/qwen", &[], &env).unwrap();
        assert!(!b.args.iter().any(|a| a.contains("env_key")));
    }

    #[test]
    fn a_missing_dialect_or_key_is_refused_with_a_way_around() {
        let env = MapEnv::new([("GROQ_API_KEY", FAKE)]);
        let e = bind(
            Agent::Claude,
            &registry(&[]),
            "groq/llama-3.3-70b-versatile",
            &[],
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("does not serve the `messages` dialect, which Claude Code speaks"),
            "{e}"
        );
        assert!(e.contains("switchyard serve"), "{e}");
        assert!(e.contains("bind_through_gateway"), "{e}");
        assert!(!e.contains("planned"), "{e}");
        let e = bind(
            Agent::Codex,
            &registry(&["backends.vllm.apis=[chat]"]),
            "vllm/qwen",
            &[],
            &MapEnv::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`responses` dialect, which Codex speaks"), "{e}");
        let e = bind(
            Agent::Claude,
            &registry(&[]),
            "deepseek/x",
            &[],
            &MapEnv::default(),
        )
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::MissingKey);
        assert!(e.to_string().contains("DEEPSEEK_API_KEY"));
    }

    #[test]
    fn a_backend_whose_encoding_edits_the_body_is_bound_through_the_gateway() {
        // The built-in `fireworks` serves Responses but wants `developer` as `system`:
        // Codex pointed at it directly would send `developer` unchanged.
        let env = MapEnv::new([("FIREWORKS_API_KEY", FAKE)]);
        let reference = "fireworks/accounts/fireworks/models/glm-4p6";
        let r = registry(&[]);
        assert!(needs_gateway(Agent::Codex, &r, reference).unwrap());
        let e = bind(Agent::Codex, &r, reference, &[], &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("backend `fireworks` has developer_role: system"),
            "{e}"
        );
        assert!(e.contains("bind_through_gateway"), "{e}");
        let reason = gateway_reason(Agent::Codex, r.backend("fireworks").unwrap()).unwrap();
        assert!(
            reason.contains("which the gateway applies to what Codex sends"),
            "{reason}"
        );
        let b = bind_through_gateway(Agent::Codex, &r, reference, &[], "http://127.0.0.1:8080")
            .unwrap();
        assert!(
            b.args
                .contains(&format!("model={}", toml_string(reference))),
            "{:?}",
            b.args
        );
        // Claude Code speaks Messages, which has no developer role: bound directly.
        assert!(!needs_gateway(Agent::Claude, &r, reference).unwrap());
        // A backend's `extra_body` for the CLI's dialect: through the gateway too.
        let r = registry(&["backends.anthropic.extra_body.metadata={user_id: u1}"]);
        assert!(needs_gateway(Agent::Claude, &r, "anthropic/claude-opus-4-5").unwrap());
        let r = registry(&[]);
        assert!(!needs_gateway(Agent::Claude, &r, "anthropic/claude-opus-4-5").unwrap());
    }

    #[test]
    fn the_cli_gets_an_env_files_variables_but_those_the_binding_removes() {
        use crate::env::file::{EnvFile, LayeredEnv};
        let file = EnvFile::parse(
            "DEEPSEEK_API_KEY=sk-deepseek-from-file-0123456789\n\
             ANTHROPIC_API_KEY=sk-ant-not-for-deepseek-0123456789\n\
             CLAUDE_CODE_USE_POWERSHELL_TOOL=0\nANTHROPIC_MODEL=other\n",
            ".env",
        )
        .unwrap();
        let env = LayeredEnv::new(&file, MapEnv::default());
        let b = bind(
            Agent::Claude,
            &registry(&[]),
            "deepseek/deepseek-chat",
            &[],
            &env,
        )
        .unwrap();
        let child = b.child_env(&env).unwrap();
        let get = |name: &str| {
            child
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("CLAUDE_CODE_USE_POWERSHELL_TOOL"), ["0"]);
        assert_eq!(
            get("ANTHROPIC_AUTH_TOKEN"),
            ["sk-deepseek-from-file-0123456789"]
        );
        // Removed by the binding (another provider's key), or set by it: not the file's.
        assert!(get("ANTHROPIC_API_KEY").is_empty(), "{child:?}");
        assert_eq!(get("ANTHROPIC_MODEL"), ["deepseek-chat"]);
    }

    #[test]
    fn claude_through_the_gateway_sends_the_reference_and_no_key() {
        let reg = registry(&[
            "backends.vllm.apis=[chat]",
            "backends.vllm.context_window=32768",
        ]);
        assert!(needs_gateway(Agent::Claude, &reg, "vllm/qwen3").unwrap());
        assert!(!needs_gateway(Agent::Claude, &registry(&[]), "vllm/qwen3").unwrap());
        let b = bind_through_gateway(
            Agent::Claude,
            &reg,
            "vllm/qwen3",
            &["-p".into(), "hi".into()],
            "http://127.0.0.1:8080/",
        )
        .unwrap();
        let text = |s: &str| Some(EnvValue::Text(s.into()));
        assert_eq!(
            b.var("ANTHROPIC_BASE_URL"),
            text("http://127.0.0.1:8080").as_ref()
        );
        assert_eq!(
            b.var("ANTHROPIC_AUTH_TOKEN"),
            text(NO_KEY_PLACEHOLDER).as_ref()
        );
        // The backend's (optional) key variable is the gateway's, not the CLI's.
        assert_eq!(
            b.unset,
            vec!["ANTHROPIC_API_KEY".to_string(), "VLLM_API_KEY".to_string()]
        );
        for v in [
            "ANTHROPIC_MODEL",
            "ANTHROPIC_DEFAULT_OPUS_MODEL",
            "ANTHROPIC_DEFAULT_SONNET_MODEL",
            "ANTHROPIC_DEFAULT_HAIKU_MODEL",
            "ANTHROPIC_DEFAULT_FABLE_MODEL",
            "ANTHROPIC_SMALL_FAST_MODEL",
            "CLAUDE_CODE_SUBAGENT_MODEL",
        ] {
            assert_eq!(b.var(v), text("vllm/qwen3").as_ref(), "{v}");
        }
        assert_eq!(
            b.var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"),
            text("1").as_ref()
        );
        assert_eq!(
            b.var("CLAUDE_CODE_MAX_CONTEXT_TOKENS"),
            text("32768").as_ref()
        );
        assert_eq!(
            b.var("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS"),
            text("1").as_ref()
        );
        assert_eq!(b.var("CLAUDE_CODE_ATTRIBUTION_HEADER"), text("0").as_ref());
        assert!(!b.env.iter().any(|(_, v)| matches!(v, EnvValue::KeyOf(_))));
        assert_eq!(b.user_args, vec!["-p".to_string(), "hi".to_string()]);
    }

    #[test]
    fn a_keyed_backend_through_the_gateway_keeps_its_key_out_of_the_binding() {
        // The gateway reads DEEPSEEK_API_KEY itself; the binding never names it.
        let reg = registry(&["backends.deepseek.apis=[chat]"]);
        let b = bind_through_gateway(
            Agent::Claude,
            &reg,
            "deepseek/deepseek-chat",
            &[],
            "http://127.0.0.1:9",
        )
        .unwrap();
        let shell = b.shell_command("claude");
        assert!(shell.contains("-u DEEPSEEK_API_KEY \\\n"), "{shell}");
        assert!(!shell.contains("$DEEPSEEK_API_KEY"), "{shell}");
        assert!(!b.env.iter().any(|(_, v)| matches!(v, EnvValue::KeyOf(_))));
        assert!(
            shell.contains("ANTHROPIC_MODEL=deepseek/deepseek-chat"),
            "{shell}"
        );
        // Nothing to read: the child's environment needs no variable at all.
        assert!(b.child_env(&MapEnv::default()).is_ok());
    }

    #[test]
    fn codex_through_the_gateway_uses_the_switchyard_provider() {
        let reg = registry(&["backends.deepseek.apis=[chat]"]);
        assert!(needs_gateway(Agent::Codex, &reg, "deepseek/deepseek-chat").unwrap());
        let user = vec!["-c".to_string(), "model_context_window=64000".to_string()];
        let b = bind_through_gateway(
            Agent::Codex,
            &reg,
            "deepseek/deepseek-chat",
            &user,
            "http://127.0.0.1:8080",
        )
        .unwrap();
        assert_eq!(
            b.args,
            vec![
                "-c",
                "model_provider=\"switchyard\"",
                "-c",
                "model=\"deepseek/deepseek-chat\"",
                "-c",
                "model_providers.switchyard.name=\"switchyard\"",
                "-c",
                "model_providers.switchyard.base_url=\"http://127.0.0.1:8080/v1\"",
                "-c",
                "model_providers.switchyard.wire_api=\"responses\"",
                "-c",
                "model_context_window=128000",
                "-c",
                "web_search=\"disabled\"",
            ]
        );
        assert_eq!(b.all_args()[b.args.len()..], user[..]);
        assert!(b.env.is_empty());
        // A window is set only when declared.
        let b = bind_through_gateway(
            Agent::Codex,
            &registry(&["backends.vllm.apis=[chat]"]),
            "vllm/qwen",
            &[],
            "http://127.0.0.1:8080/v1",
        )
        .unwrap();
        assert!(!b.args.iter().any(|a| a.starts_with("model_context_window")));
        assert!(b
            .args
            .contains(&"model_providers.switchyard.base_url=\"http://127.0.0.1:8080/v1\"".into()));
    }

    #[test]
    fn quoting_for_shells_and_toml() {
        assert_eq!(shell_quote("abc-1.2/x"), "abc-1.2/x");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("a\"b c"), "'a\"b c'");
        assert_eq!(toml_string(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
