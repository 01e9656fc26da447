//! Typed configuration errors: what was wrong, where (file:line:col when known) and what
//! is accepted.

use std::fmt;

/// Where a configuration problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The source: a file path, `built-in backends`, `override 'backends.x.y=…'` or
    /// `environment variable X`.
    pub source: String,
    /// 1-based line, when the source is a file and the position is known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
}

impl Location {
    /// A location without a position (an override, an environment variable).
    pub fn source(source: impl Into<String>) -> Self {
        Location {
            source: source.into(),
            line: None,
            column: None,
        }
    }

    /// A location at `line:column` (both 1-based) of `source`.
    pub fn at(source: impl Into<String>, line: usize, column: usize) -> Self {
        Location {
            source: source.into(),
            line: Some(line),
            column: Some(column),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// Formats `Some(x)` as ` (did you mean `x`?)` and `None` as nothing.
fn did_you_mean(nearest: &Option<String>) -> String {
    match nearest {
        Some(n) => format!(" (did you mean `{n}`?)"),
        None => String::new(),
    }
}

/// One problem in a configuration layer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigProblem {
    /// The file could not be read.
    #[error("cannot read the file: {message}")]
    Io {
        /// The operating system's message.
        message: String,
    },
    /// The YAML itself is malformed.
    #[error("invalid YAML: {message}")]
    Yaml {
        /// The parser's message.
        message: String,
    },
    /// A field (or top-level key) that is not accepted here.
    #[error("unknown {what} `{field}`{}; accepted: {}", did_you_mean(.nearest), .accepted.join(", "))]
    UnknownField {
        /// What kind of key: `backend field`, `price field`, `top-level key`...
        what: String,
        /// The key as written.
        field: String,
        /// Every accepted key.
        accepted: Vec<String>,
        /// The accepted key nearest to what was written, if any is close.
        nearest: Option<String>,
    },
    /// A field whose name says it holds a secret.
    #[error("`{field}` would put a key in a configuration file; keys stay in the environment: put it in an environment variable and name that variable with `api_key_env`")]
    KeyField {
        /// The field's name.
        field: String,
    },
    /// A value that looks like a provider key (the value itself is never printed).
    #[error("the value of `{field}` looks like an API key; keys stay in the environment: put it in an environment variable and name that variable with `api_key_env`")]
    KeyValue {
        /// The field holding the value.
        field: String,
    },
    /// A value that is not one of a closed set (dialect, auth, kind, developer_role).
    #[error("unknown {what} `{value}` in `{field}`{}; accepted: {}", did_you_mean(.nearest), .accepted.join(", "))]
    UnknownValue {
        /// What the value names: `dialect`, `auth`, `kind`...
        what: String,
        /// The field holding it.
        field: String,
        /// The value as written.
        value: String,
        /// The accepted values.
        accepted: Vec<String>,
        /// The nearest accepted value, if any is close.
        nearest: Option<String>,
    },
    /// A value of the wrong type.
    #[error("`{field}` must be {expected}, found {found}")]
    WrongType {
        /// The field.
        field: String,
        /// What is accepted, in words.
        expected: String,
        /// What was found, in words.
        found: String,
    },
    /// A URL that does not parse or is not http(s).
    #[error("`{field}` is not a valid http(s) URL (`{value}`): {reason}")]
    InvalidUrl {
        /// The field.
        field: String,
        /// The value as written.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// A negative price or context window.
    #[error("`{field}` must not be negative (found {value})")]
    Negative {
        /// The field.
        field: String,
        /// The value as written.
        value: String,
    },
    /// `from` names a backend that does not exist.
    #[error("backend `{backend}` has `from: {from}`, but no backend `{from}` exists{}", did_you_mean(.nearest))]
    UnknownFrom {
        /// The backend with the `from`.
        backend: String,
        /// The name it copies from.
        from: String,
        /// The nearest known backend.
        nearest: Option<String>,
    },
    /// A cycle of `from`.
    #[error("`from` makes a cycle: {}", .cycle.join(" -> "))]
    FromCycle {
        /// The backends in the cycle, the first repeated at the end.
        cycle: Vec<String>,
    },
    /// An http backend without a `base_url`.
    #[error(
        "backend `{backend}` has kind `http` but no `base_url` (add one, or `from: <backend>`)"
    )]
    MissingBaseUrl {
        /// The backend.
        backend: String,
    },
    /// A field set on a backend whose kind does not use it (`command` on an `http` backend).
    #[error("backend `{backend}` has `{field}`, which only kinds {} use, but its kind is `{kind}`", .kinds.join(" and "))]
    FieldNotForKind {
        /// The backend.
        backend: String,
        /// The field.
        field: String,
        /// The backend's kind.
        kind: String,
        /// The kinds that use the field.
        kinds: Vec<String>,
    },
    /// A malformed backend name.
    #[error(
        "invalid backend name `{name}`: use letters, digits, `-` and `_`, starting with a letter"
    )]
    BadName {
        /// The name as written.
        name: String,
    },
    /// A role setting the role's backend does not take.
    #[error("role `{role}`: backend `{backend}` ({called}) does not take `{setting}`{}; it takes: {}", did_you_mean(.nearest), .accepted.join(", "))]
    SettingNotTaken {
        /// The role.
        role: String,
        /// The setting as written.
        setting: String,
        /// The role's backend.
        backend: String,
        /// How it is called: `kind http, dialect messages`.
        called: String,
        /// The settings it takes.
        accepted: Vec<String>,
        /// The accepted setting nearest to what was written.
        nearest: Option<String>,
    },
    /// A role that cannot be resolved (no model, an unknown backend, an inline endpoint
    /// missing a field...).
    #[error("role `{role}`: {message}")]
    Role {
        /// The role.
        role: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// A value refused by the section that reads it (a `budget:` field…); the message
    /// names the field and says what is accepted.
    #[error("{message}")]
    Invalid {
        /// The key path (`budget.max_usd`).
        field: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// A malformed command-line override.
    #[error("invalid override `{text}`: {reason}; expected `backends.<name>.<field>=<value>`, `backends.<name>={{<field>: <value>, …}}` or `<section>...=<value>` with a section among: {}", .accepted.join(", "))]
    BadOverride {
        /// The override as written.
        text: String,
        /// Why it was refused.
        reason: String,
        /// The accepted top-level sections.
        accepted: Vec<String>,
    },
}

/// A configuration problem and where it was found.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{location}: {problem}")]
pub struct ConfigError {
    /// Where.
    pub location: Location,
    /// What (boxed: keeps `Result<_, ConfigError>` small).
    pub problem: Box<ConfigProblem>,
}

impl ConfigError {
    /// Pairs a problem with its location.
    pub fn new(location: Location, problem: ConfigProblem) -> Self {
        ConfigError {
            location,
            problem: Box::new(problem),
        }
    }
}

/// Every problem found while loading configuration (never empty when returned as an error).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl ConfigErrors {
    /// The problems, in the order found.
    pub fn errors(&self) -> &[ConfigError] {
        &self.0
    }
}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        ConfigErrors(vec![e])
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}
