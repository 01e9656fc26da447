//! The command-line grammar (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const OVERRIDES_HELP: &str =
    "Overrides, `backends.<name>.<field>=<value>` with the value read as YAML \
(e.g. `backends.vllm.apis=[chat]`, `backends.vllm.base_url=http://gpu-box:8000/v1`). \
They win over every file and over <NAME>_BASE_URL.";

const RUN_OVERRIDES_HELP: &str =
    "Overrides of the run config, the value read as YAML: `llm.<role>.model=<reference>`, \
`llm.<role>.<setting>=<value>`, `model=<reference>` (the default of roles that name none), \
`backends.<name>.<field>=<value>`.";

/// Switchyard: name, reach, meter, record and replay every LLM a program calls.
///
/// A model is named by a reference, `<backend>/<model id>` (`fireworks/accounts/fireworks/models/glm-5p3-flash`,
/// `vllm/qwen`). Backends come from layers, lowest first: the built-ins, your file
/// (`$SWITCHYARD_BACKENDS`, else `$XDG_CONFIG_HOME/switchyard/backends.yaml`, else
/// `~/.config/switchyard/backends.yaml`), the run config given with `--config`,
/// `<NAME>_BASE_URL` in the environment, and overrides on the command line.
#[derive(Debug, Parser)]
#[command(name = "switchyard", version, propagate_version = true)]
pub(crate) struct Cli {
    /// A run config (YAML) for the command that follows (also accepted after it, by the
    /// commands that read one).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// An env file for the command that follows (also accepted after it, by the commands
    /// that read keys).
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

/// The files a command that resolves backends reads: `--config` and `--env-file`, given
/// after the command (they are not global: `mock` and `log` take neither).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ConfigArgs {
    /// A run config (YAML): its `backends:` section applies above your backends file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// An env file (`KEY=VALUE` lines, `#` comments, quotes) whose variables are used,
    /// over the process environment, for keys, `<NAME>_BASE_URL` and `SWITCHYARD_MODEL`.
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
}

impl Command {
    /// The `--config` and `--env-file` given after the command, for the commands that
    /// take them (`None`: `mock` and `log`, which read neither).
    pub(crate) fn config_args(&self) -> Option<ConfigArgs> {
        match self {
            Command::Backends(BackendsCommand::List(a)) => Some(a.files.clone()),
            Command::Backends(BackendsCommand::Show(a)) => Some(a.files.clone()),
            Command::Backends(BackendsCommand::Check(a)) => Some(a.files.clone()),
            Command::Backends(BackendsCommand::Shell(a)) => Some(a.files.clone()),
            Command::Ask(a) => Some(a.files.clone()),
            Command::Check(a) => Some(a.files.clone()),
            Command::Bind(a) => Some(a.files.clone()),
            Command::Serve(a) => Some(a.files.clone()),
            Command::Init(a) => Some(ConfigArgs {
                config: a.config.clone(),
                env_file: a.env_file.clone(),
            }),
            Command::Log(_) | Command::Mock(_) | Command::Store(_) => None,
        }
    }

    /// The command's name as typed, for messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Command::Backends(_) => "backends",
            Command::Ask(_) => "ask",
            Command::Check(_) => "check",
            Command::Init(_) => "init",
            Command::Log(_) => "log",
            Command::Bind(_) => "bind",
            Command::Mock(_) => "mock",
            Command::Serve(_) => "serve",
            Command::Store(_) => "store",
        }
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Inspect the backends: where each model reference goes, with which key variable.
    #[command(subcommand)]
    Backends(BackendsCommand),
    /// Ask a model one question and print the reply and a one-line usage summary.
    ///
    /// Example: `switchyard ask mock/echo "hello"` (start `switchyard mock` first).
    Ask(AskArgs),
    /// Check a run config: per role the reference, backend, dialect, whether it is served,
    /// the key variable, the price and the context window, and every problem at once.
    ///
    /// Exits non-zero on any problem (a role that cannot work, or the file's own: a key
    /// written in it, an unknown key, `budget:`). Every command that runs a config runs this
    /// check first. Example: `switchyard check --config run.yaml llm.planner.model=mock/echo`.
    Check(RunCheckArgs),
    /// Write a backend's key into an env file (created 0600) and print the variable's name.
    ///
    /// Example: `switchyard init --backend openai --api-key-stdin --env-file .env.switchyard`,
    /// then `switchyard ask --env-file .env.switchyard ...`. For a Google ADC backend (vertex),
    /// checks the credentials and GOOGLE_CLOUD_PROJECT instead.
    Init(InitArgs),
    /// Read a recorded run: stats, one call, or every call exported.
    #[command(subcommand)]
    Log(LogCommand),
    /// The gateway's PostgreSQL store (docs/scaling.md): `store migrate` creates or
    /// upgrades its schema, alone.
    ///
    /// Example: `SWITCHYARD_PG_URL=postgres://user:pw@host/db switchyard store migrate`.
    #[command(subcommand)]
    Store(StoreCommand),
    /// Run Claude Code or Codex bound to a backend (`--print`: show the command instead).
    ///
    /// Example: `switchyard bind claude deepseek/deepseek-chat -- -p "hello"`,
    /// `switchyard bind codex vllm/qwen --print`.
    Bind(BindArgs),
    /// Run the mock provider: every dialect, behaviours picked by model name (see
    /// docs/mock.md), until ctrl-c.
    ///
    /// Example: `switchyard mock`, then `switchyard ask mock/echo "hello"`.
    Mock(MockArgs),
    /// Run the gateway: one endpoint for OpenAI (chat, Responses), Anthropic Messages and
    /// Gemini clients, passing through or translating to any backend (see docs/gateway.md).
    ///
    /// Example: `switchyard serve`, then point a client at http://127.0.0.1:8080/v1 with
    /// model `mock/echo`.
    Serve(ServeArgs),
}

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on (default: the config's `listen`, else 127.0.0.1:8080).
    /// An address beyond loopback needs `keys:` in the config, or
    /// --allow-public-without-keys.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,

    /// Where the gateway keeps its store (default: the config's `store`).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<std::path::PathBuf>,

    /// Share a PostgreSQL store with other replicas (docs/scaling.md): `postgres` (the
    /// URL from $SWITCHYARD_PG_URL, or the config's `store.postgres.url_env`), or a
    /// postgres:// URL without a password. Needs --data-dir: the replica's own copy of
    /// its calls.
    #[arg(long, value_name = "postgres|URL")]
    pub store: Option<String>,

    /// Listen beyond loopback even with no client keys configured.
    #[arg(long)]
    pub allow_public_without_keys: bool,

    /// The largest request body accepted, in bytes (default 32 MiB).
    #[arg(long, value_name = "N")]
    pub max_body_bytes: Option<usize>,

    /// Do not start the built-in mock provider for the `mock` backend.
    #[arg(long)]
    pub no_mock: bool,

    /// Threads that serve connections, each a runtime of its own that keeps a connection
    /// from its first byte to its last (default: one per core). 0: every connection on
    /// one shared pool of a worker per core, which can answer a lone client sooner on a
    /// machine slow to wake an idle core (docs/performance.md, Lanes). Wins over the
    /// config's `listen.lanes`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=switchyard_gateway::MAX_LANES as i64))]
    pub lanes: Option<u16>,

    #[command(flatten)]
    pub files: ConfigArgs,

    #[arg(value_name = "OVERRIDE", help = OVERRIDES_HELP)]
    pub overrides: Vec<String>,
}

/// Arguments of `check` (a run config).
#[derive(Debug, Args)]
pub(crate) struct RunCheckArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub files: ConfigArgs,

    #[arg(value_name = "OVERRIDE", help = RUN_OVERRIDES_HELP)]
    pub overrides: Vec<String>,
}

/// Arguments of `init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The backend whose key to write (e.g. `openai`, `deepseek`, `vertex`).
    #[arg(long, value_name = "NAME")]
    pub backend: String,

    /// The key (it stays in your shell history: prefer --api-key-stdin).
    #[arg(long, value_name = "KEY", conflicts_with = "api_key_stdin")]
    pub api_key: Option<String>,

    /// Read the key from standard input (one line).
    #[arg(long)]
    pub api_key_stdin: bool,

    /// The env file the key is written to (created 0600 when missing; the variable's
    /// line replaced when present).
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,

    /// A run config (YAML) whose `backends:` section declares the backend.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    #[arg(value_name = "OVERRIDE", help = OVERRIDES_HELP)]
    pub overrides: Vec<String>,
}

/// The CLI agents `bind` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BindAgent {
    /// Claude Code (`claude`), bound through the backend's `messages` dialect.
    Claude,
    /// Codex (`codex`), bound through the backend's `responses` dialect.
    Codex,
}

/// Arguments of `bind`.
#[derive(Debug, Args)]
pub(crate) struct BindArgs {
    /// The CLI to run.
    #[arg(value_enum)]
    pub agent: BindAgent,

    /// The model, `<backend>/<model id>` (e.g. `deepseek/deepseek-chat`, `vllm/qwen`).
    pub reference: String,

    /// Print the environment and arguments as one command a POSIX shell can paste (keys
    /// written as `"$VARIABLE"`), instead of running the CLI.
    #[arg(long)]
    pub print: bool,

    #[command(flatten)]
    pub files: ConfigArgs,

    #[arg(value_name = "OVERRIDE", help = OVERRIDES_HELP)]
    pub overrides: Vec<String>,

    /// Arguments for the CLI, after `--` (they come after Switchyard's, so they win).
    #[arg(last = true, value_name = "CLI ARGS")]
    pub args: Vec<String>,
}

/// Arguments of `mock`.
#[derive(Debug, Args)]
pub(crate) struct MockArgs {
    /// The port on 127.0.0.1 (0: any free port, printed at start). 4010 is where the
    /// built-in `mock` backend points.
    #[arg(long, default_value_t = 4010, value_name = "N")]
    pub port: u16,

    /// A scenario file (YAML or JSON) scripting more behaviours (see docs/mock.md).
    #[arg(long, value_name = "FILE")]
    pub scenarios: Option<PathBuf>,

    /// Accept any history: do not refuse forged signatures, tool results without their
    /// calls and the like with the providers' 400s (the `lenient` model-name component,
    /// for every call).
    #[arg(long)]
    pub lenient: bool,
}

/// `switchyard store ...`
#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Create the PostgreSQL store's schema, or upgrade it to this build's version, and
    /// print the version it was at and is now at.
    Migrate(StoreMigrateArgs),
}

/// Arguments of `store migrate`.
#[derive(Debug, Args)]
pub(crate) struct StoreMigrateArgs {
    /// The environment variable holding the database's URL (never the URL itself: it
    /// carries the password).
    #[arg(long, default_value = "SWITCHYARD_PG_URL", value_name = "VAR")]
    pub url_env: String,
}

/// `switchyard log ...`
#[derive(Debug, Subcommand)]
pub(crate) enum LogCommand {
    /// Calls, errors, tokens and cost by role and by model (an unknown cost is shown as
    /// `unknown`, and a total with unknowns is marked as a lower bound).
    Stats(LogStatsArgs),
    /// One call, readable: role, model, request, reply, usage, cost, attempts, error.
    Show(LogShowArgs),
    /// Every call, as JSON lines (whole records) or CSV (the index's columns).
    Export(LogExportArgs),
    /// The web console over a run directory or a gateway's data directory, on
    /// 127.0.0.1 only: the calls, one call in full, spend over time, budgets.
    View(LogViewArgs),
}

/// Arguments of `log view`.
#[derive(Debug, Args)]
pub(crate) struct LogViewArgs {
    #[command(flatten)]
    pub source: LogSource,
    /// The port on 127.0.0.1 (0, the default: any free port; the URL is printed).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub port: u16,
    /// Open the console in the browser (xdg-open or open; nothing fails without one).
    #[arg(long)]
    pub open: bool,
}

/// Where `log` reads calls from: a run directory (or a gateway's data directory), or
/// with `--store` a PostgreSQL store that gateway replicas share.
#[derive(Debug, Args)]
pub(crate) struct LogSource {
    /// The run directory (holding run.yaml and llm_log/), or a gateway's data directory.
    pub run_dir: Option<PathBuf>,
    /// Read a PostgreSQL store instead: `postgres` (its URL from $SWITCHYARD_PG_URL), or
    /// a `postgres://` URL without a password (one with a password is refused: a command
    /// line is visible to every user of the machine).
    #[arg(long, value_name = "STORE", conflicts_with = "run_dir")]
    pub store: Option<String>,
}

/// Arguments of `log stats`.
#[derive(Debug, Args)]
pub(crate) struct LogStatsArgs {
    #[command(flatten)]
    pub source: LogSource,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `log show`.
#[derive(Debug, Args)]
pub(crate) struct LogShowArgs {
    /// The run directory, then the call's number: `log show RUN_DIR 3`. With --store, the
    /// call alone: its id (`<replica>-<number>`, as `log export --store` prints it), or
    /// a number only one replica has.
    #[arg(value_name = "RUN_DIR|CALL")]
    pub first: String,
    /// The call's number, after a run directory.
    #[arg(value_name = "CALL")]
    pub second: Option<String>,
    /// Read a PostgreSQL store instead (see `log stats --help`).
    #[arg(long, value_name = "STORE")]
    pub store: Option<String>,
    /// Print the reply's raw bytes exactly as received, nothing else.
    #[arg(long)]
    pub raw: bool,
}

/// The formats of `log export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExportFormat {
    /// One whole record per line.
    Jsonl,
    /// One row per call with the calls index's columns.
    Csv,
}

/// Arguments of `log export`.
#[derive(Debug, Args)]
pub(crate) struct LogExportArgs {
    #[command(flatten)]
    pub source: LogSource,
    /// The format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: ExportFormat,
}

/// Arguments of `ask`.
#[derive(Debug, Args)]
pub(crate) struct AskArgs {
    /// `[REFERENCE] PROMPT [OVERRIDE]...`. REFERENCE is the model, `<backend>/<model id>`
    /// (e.g. `mock/echo`, `openai/gpt-5.4`); leave it out when the override `model=…`,
    /// SWITCHYARD_MODEL or the run config's `model:` names one. PROMPT is the user message.
    /// Overrides, `<section>.<field>=<value>` read as YAML, come last (`backends.vllm.apis=[chat]`,
    /// `model=mock/echo`); they win over every file and over `<NAME>_BASE_URL`.
    #[arg(value_name = "ARGS", required = true, num_args = 1..)]
    pub words: Vec<String>,

    /// The model, when given (filled from `words`).
    #[arg(skip)]
    pub reference: Option<String>,

    /// The prompt (filled from `words`).
    #[arg(skip)]
    pub prompt: String,

    /// Call as this role of the run config: its model, settings, retry, timeouts and route
    /// (a reference given wins over its model). A name the config lacks is a name for the
    /// caller in records, budgets and replay; a replay answers for the recorded role.
    #[arg(long, value_name = "NAME")]
    pub role: Option<String>,

    /// A system prompt.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,

    /// The most output tokens (1 or more; leave it out for the backend's default).
    #[arg(long, value_name = "N", value_parser = output_limit)]
    pub max_tokens: Option<u64>,

    /// Stream the reply as it is written (the default when the output is a terminal).
    #[arg(long, conflicts_with = "no_stream")]
    pub stream: bool,

    /// Wait for the whole reply before printing it.
    #[arg(long)]
    pub no_stream: bool,

    /// Print the whole reply as JSON (content, finish reason, usage, model, id).
    #[arg(long)]
    pub json: bool,

    /// Record the call into this run directory (run.yaml, llm_log/, calls.sqlite); also
    /// `log: <dir>` in the run config or the override `log=<dir>`.
    #[arg(long, value_name = "DIR")]
    pub log: Option<PathBuf>,

    /// Append to a run directory that already holds a run.
    #[arg(long)]
    pub resume: bool,

    /// Answer from a recorded run instead of calling a provider (its reference, model and
    /// prices are used, whatever the current config says).
    #[arg(long, value_name = "RUN_DIR")]
    pub replay: Option<PathBuf>,

    /// Fail at the first error instead of waiting out rate limits (30 s, 60 s, 120 s, or
    /// the run config's `retry:`) and asking again after a malformed reply (5 s, 30 s).
    #[arg(long)]
    pub no_retry: bool,

    #[command(flatten)]
    pub files: ConfigArgs,

    /// The overrides (filled from `words`).
    #[arg(skip)]
    pub overrides: Vec<String>,
}

impl AskArgs {
    /// Splits the positional words into the reference (when given), the prompt and the
    /// overrides: the overrides are the trailing words that look like one
    /// (`backends.x.y=…`, `model=…`); before them come one word (the prompt) or two (the
    /// reference, then the prompt).
    pub(crate) fn split_words(&mut self) -> Result<(), String> {
        let first_override = self
            .words
            .iter()
            .position(|w| switchyard::registry::looks_like_override(w))
            .unwrap_or(self.words.len());
        let (plain, overrides) = self.words.split_at(first_override);
        if let Some(stray) = overrides
            .iter()
            .find(|w| !switchyard::registry::looks_like_override(w))
        {
            return Err(format!(
                "error: `{}` comes after an override; give the reference and the prompt first, then overrides (`switchyard ask [REFERENCE] PROMPT [OVERRIDE]...`)",
                switchyard::registry::redacted(stray)
            ));
        }
        let (reference, prompt) = match plain {
            [prompt] => (None, prompt.clone()),
            [reference, prompt] => (Some(reference.clone()), prompt.clone()),
            [] => {
                return Err(
                    "error: no prompt: `switchyard ask [REFERENCE] PROMPT [OVERRIDE]...` (e.g. `switchyard ask mock/echo \"hello\"`)"
                        .to_string(),
                )
            }
            more => {
                return Err(format!(
                    "error: `ask` takes a reference and one prompt, got {} words before the overrides; quote the prompt (`switchyard ask mock/echo \"{}\"`)",
                    more.len(),
                    more[1..].join(" ")
                ))
            }
        };
        self.reference = reference;
        self.prompt = prompt;
        self.overrides = overrides.to_vec();
        Ok(())
    }
}

/// `--max-tokens`: a whole number of 1 or more.
fn output_limit(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("0 leaves no room for a reply: give 1 or more, or leave --max-tokens out for the backend's default".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number: give the most output tokens, 1 or more")),
    }
}

/// `switchyard backends ...`
#[derive(Debug, Subcommand)]
pub(crate) enum BackendsCommand {
    /// List every backend: name, kind, base URL, dialects, key variable (set or not) and
    /// the layers it comes from.
    List(ListArgs),
    /// Resolve a reference: backend, model id after aliases, the URL of each dialect, auth,
    /// key variable, price, context window, and the layer of each field.
    Show(ShowArgs),
    /// Check what a backend claims: `GET /models`, then one short request per dialect it
    /// lists (and a `namespace` tool for `responses`), timed; exits non-zero when a claim
    /// fails.
    Check(CheckArgs),
    /// Print a backend's origin and path (`origin=https://api.deepseek.com path=`), for
    /// putting a meter or relay in front of it.
    Shell(ShellArgs),
}

/// Arguments of `backends check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The reference to check, `<backend>/<model id>`.
    #[arg(required_unless_present = "all")]
    pub reference: Option<String>,

    /// Check every http backend whose key variable is set, with its first alias or priced
    /// model (backends that need no key are skipped: check them by reference).
    #[arg(long)]
    pub all: bool,

    /// Print the findings as JSON (a list of them with `--all`) instead of tables; the
    /// progress still goes to standard error.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub files: ConfigArgs,

    #[arg(value_name = "OVERRIDE", help = OVERRIDES_HELP)]
    pub overrides: Vec<String>,
}

/// Arguments of `backends shell`.
#[derive(Debug, Args)]
pub(crate) struct ShellArgs {
    /// The backend, or a reference `<backend>/<model id>`.
    pub reference: String,

    #[command(flatten)]
    pub files: ConfigArgs,

    #[arg(value_name = "OVERRIDE", help = OVERRIDES_HELP)]
    pub overrides: Vec<String>,
}

/// Arguments of `backends list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub files: ConfigArgs,

    #[arg(value_name = "OVERRIDE", help = OVERRIDES_HELP)]
    pub overrides: Vec<String>,
}

/// Arguments of `backends show`.
#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// The reference, `<backend>/<model id or alias>` (e.g. `vllm/qwen`).
    pub reference: String,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,

    /// Print only what `litellm.completion(...)` needs to reach the same endpoint: the
    /// `model` string (`<litellm prefix>/<model id>`), the `api_base` and the key variable.
    #[arg(long)]
    pub litellm: bool,

    #[command(flatten)]
    pub files: ConfigArgs,

    #[arg(value_name = "OVERRIDE", help = OVERRIDES_HELP)]
    pub overrides: Vec<String>,
}
