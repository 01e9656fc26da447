//! `store: {postgres: {url_env: SWITCHYARD_PG_URL}}`: where the PostgreSQL store's URL
//! comes from. Only an environment variable's name goes in the file: a URL carries a
//! password, and config files are shared, printed and committed.

use serde_json::Value;

/// The variable read when `url_env` is not given.
pub const DEFAULT_URL_ENV: &str = "SWITCHYARD_PG_URL";

/// The connections a replica opens for its calls' budget and rate checks, unless
/// `pool_size` says otherwise (the shipper of records and the settler hold one more each).
pub const DEFAULT_POOL_SIZE: usize = 16;

/// What a build without the `postgres` feature answers where the store is asked for (the
/// caller adds what to do instead).
pub const NOT_BUILT: &str = "this build of switchyard has no PostgreSQL store: built without the `postgres` feature; rebuild with it (the default)";

const FIELDS: &str = "url_env, on_store_down, pool_size";

/// The `postgres:` section of `store:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgStoreConfig {
    /// The environment variable holding the URL.
    pub url_env: String,
    /// What a replica does while the database is unreachable.
    pub on_store_down: OnStoreDown,
    /// The connections for the calls' checks.
    pub pool_size: usize,
    /// A URL given on the command line (`switchyard serve --store postgres://…`),
    /// which holds no password; never read from a file, whose URL is refused.
    pub url: Option<String>,
}

/// What a replica does while it cannot reach the database (`on_store_down:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnStoreDown {
    /// Refuses calls (503, `Retry-After`) until the database is back: nothing is served
    /// that the shared store has not seen. The default, as peers default.
    #[default]
    Refuse,
    /// Keeps serving calls of keys without a budget or rate limit (those are held in the
    /// database and cannot be checked without it), their records kept on the local disk
    /// and shipped when the database is back.
    Serve,
}

impl OnStoreDown {
    /// The config's names.
    pub const NAMES: &'static str = "refuse, serve";

    /// The config name.
    pub fn as_str(self) -> &'static str {
        match self {
            OnStoreDown::Refuse => "refuse",
            OnStoreDown::Serve => "serve",
        }
    }
}

impl PgStoreConfig {
    /// Reads the section (as YAML parsed to JSON values). Every problem is named with what
    /// is accepted; a URL written in the file is refused, pointing at `url_env`.
    pub fn read(section: &Value) -> Result<Self, String> {
        let map = match section {
            Value::Null => return Ok(Self::default()),
            Value::Object(map) => map,
            Value::String(s) if looks_like_url(s) => return Err(literal_url()),
            other => return Err(not_a_mapping(other)),
        };
        let mut config = Self::default();
        for (field, value) in map {
            match (field.as_str(), value) {
                ("url_env", Value::String(name)) if looks_like_url(name) => {
                    return Err(literal_url())
                }
                ("url_env", Value::String(name)) if is_env_name(name) => {
                    config.url_env = name.clone()
                }
                ("url_env", other) => {
                    return Err(format!(
                        "store.postgres.url_env: expected an environment variable's name \
                         (letters, digits, `_`), found {}",
                        kind(other)
                    ))
                }
                ("url", _) => return Err(literal_url()),
                ("on_store_down", Value::String(s)) if s == "refuse" => {
                    config.on_store_down = OnStoreDown::Refuse
                }
                ("on_store_down", Value::String(s)) if s == "serve" => {
                    config.on_store_down = OnStoreDown::Serve
                }
                ("on_store_down", other) => {
                    return Err(format!(
                        "store.postgres.on_store_down: expected one of {}, found {other}",
                        OnStoreDown::NAMES
                    ))
                }
                ("pool_size", v) => match v.as_u64() {
                    Some(n) if (1..=1000).contains(&n) => config.pool_size = n as usize,
                    _ => {
                        return Err(format!(
                            "store.postgres.pool_size: expected a whole number of connections from 1 to 1000, found {v}"
                        ))
                    }
                },
                (other, _) => {
                    return Err(format!(
                        "store.postgres: unknown field `{other}`; accepted: {FIELDS}"
                    ))
                }
            }
        }
        Ok(config)
    }

    /// The URL from the environment (`get` reads a variable), or what to set.
    pub fn url(&self, get: impl Fn(&str) -> Option<String>) -> Result<String, String> {
        if let Some(url) = &self.url {
            return Ok(url.clone());
        }
        match get(&self.url_env) {
            Some(url) if !url.trim().is_empty() => {
                register_password(&url);
                Ok(url)
            }
            _ => Err(format!(
                "store.postgres: the environment variable {} is not set; set it to the \
                 database's URL, e.g. postgres://user:password@host:5432/switchyard",
                self.url_env
            )),
        }
    }
}

impl Default for PgStoreConfig {
    fn default() -> Self {
        PgStoreConfig {
            url_env: DEFAULT_URL_ENV.to_string(),
            on_store_down: OnStoreDown::default(),
            pool_size: DEFAULT_POOL_SIZE,
            url: None,
        }
    }
}

fn not_a_mapping(found: &Value) -> String {
    let found = kind(found);
    format!("store.postgres: expected a mapping like {{url_env: {DEFAULT_URL_ENV}}}, found {found}")
}

fn literal_url() -> String {
    format!(
        "store.postgres: a URL written in the config file is refused (it carries the \
         database's password); put it in an environment variable and name that variable: \
         postgres: {{url_env: {DEFAULT_URL_ENV}}}"
    )
}

fn looks_like_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://") || s.contains('=')
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string that is not a variable's name",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Registers the password of `url` (its user information's, or a `password=` parameter's),
/// as written and percent-decoded, for redaction: a database error quoting the URL, or a
/// record holding it, never shows it.
pub fn register_password(url: &str) {
    let Some((_, rest)) = url.split_once("://") else {
        return;
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let mut passwords = Vec::new();
    if let Some((userinfo, _host)) = authority.rsplit_once('@') {
        if let Some((_user, password)) = userinfo.split_once(':') {
            passwords.push(password);
        }
    }
    if let Some((_, query)) = tail.split_once('?') {
        passwords.extend(query.split('&').filter_map(|p| p.strip_prefix("password=")));
    }
    for password in passwords {
        let origin = "the PostgreSQL URL's password";
        switchyard::internal::redact::register(password, origin);
        let decoded = url::form_urlencoded::parse(format!("p={password}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned());
        if let Some(decoded) = decoded.filter(|d| d != password) {
            switchyard::internal::redact::register(&decoded, origin);
        }
    }
}

/// `url` as it may be shown: the password, if any, replaced by `***` (a URL whose
/// shape is not recognised is not shown at all).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(a PostgreSQL URL, not shown)".to_string();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    // The password may hold `@`: the host follows the last one.
    let shown = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_string(),
    };
    // A `password=` query parameter is hidden too.
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some(("password", _)) => "password=***".to_string(),
                    _ => p.to_string(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{shown}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_password_read_is_redacted_as_written_and_decoded() {
        let config = PgStoreConfig::default();
        let url =
            "postgres://sy:p%40ss-word-0123@db:5432/sy?sslmode=require&password=second-secret-99";
        config.url(|_| Some(url.to_string())).unwrap();
        let clean = |t: &str| switchyard::internal::redact::redact(t).into_owned();
        assert_eq!(
            clean("auth failed: p%40ss-word-0123"),
            "auth failed: [redacted]"
        );
        assert_eq!(
            clean("auth failed: p@ss-word-0123"),
            "auth failed: [redacted]"
        );
        assert_eq!(clean("password=second-secret-99"), "password=[redacted]");
        assert_eq!(clean("user sy at db"), "user sy at db");
    }

    #[test]
    fn the_variable_is_read_and_a_literal_url_refused() {
        assert_eq!(
            PgStoreConfig::read(&json!(null)).unwrap().url_env,
            DEFAULT_URL_ENV
        );
        assert_eq!(
            PgStoreConfig::read(&json!({"url_env": "PG"}))
                .unwrap()
                .url_env,
            "PG"
        );
        for bad in [
            json!("postgres://u:secret@h/db"),
            json!({"url_env": "postgres://u:secret@h/db"}),
            json!({"url": "postgres://u:secret@h/db"}),
        ] {
            let e = PgStoreConfig::read(&bad).unwrap_err();
            assert!(e.contains("url_env: SWITCHYARD_PG_URL"), "{e}");
            assert!(!e.contains("secret"), "{e}");
        }
        let e = PgStoreConfig::read(&json!({"pool": 3})).unwrap_err();
        assert!(
            e.contains("unknown field `pool`; accepted: url_env, on_store_down, pool_size"),
            "{e}"
        );
        let c = PgStoreConfig::read(&json!({"on_store_down": "serve", "pool_size": 4})).unwrap();
        assert_eq!((c.on_store_down, c.pool_size), (OnStoreDown::Serve, 4));
        let e = PgStoreConfig::read(&json!({"on_store_down": "wait"})).unwrap_err();
        assert!(e.contains("expected one of refuse, serve"), "{e}");
        let e = PgStoreConfig::read(&json!({"url_env": "1X"})).unwrap_err();
        assert!(e.contains("environment variable's name"), "{e}");
    }

    #[test]
    fn an_unset_variable_says_what_to_set() {
        let c = PgStoreConfig::default();
        let e = c.url(|_| None).unwrap_err();
        assert!(e.contains("SWITCHYARD_PG_URL is not set"), "{e}");
        assert_eq!(
            c.url(|_| Some("postgres://h/db".into())).unwrap(),
            "postgres://h/db"
        );
    }

    #[test]
    fn passwords_are_never_shown() {
        assert_eq!(
            redact_url("postgres://u:p@ss@h:5/db?x=1"),
            "postgres://u:***@h:5/db?x=1"
        );
        assert_eq!(redact_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            redact_url("postgres://h/db?user=u&password=pw"),
            "postgres://h/db?user=u&password=***"
        );
        assert!(!redact_url("host=h password=pw").contains("pw"));
    }
}
