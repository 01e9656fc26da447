//! `store: {postgres: {url_env: SWITCHYARD_PG_URL}}`: where the PostgreSQL store's URL
//! comes from. Only an environment variable's name goes in the file: a URL carries a
//! password, and config files are shared, printed and committed.

use serde_json::Value;

/// The variable read when `url_env` is not given.
pub const DEFAULT_URL_ENV: &str = "SWITCHYARD_PG_URL";

/// The `postgres:` section of `store:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgStoreConfig {
    /// The environment variable holding the URL.
    pub url_env: String,
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
                (other, _) => {
                    return Err(format!(
                        "store.postgres: unknown field `{other}`; accepted: url_env"
                    ))
                }
            }
        }
        Ok(config)
    }

    /// The URL from the environment (`get` reads a variable), or what to set.
    pub fn url(&self, get: impl Fn(&str) -> Option<String>) -> Result<String, String> {
        match get(&self.url_env) {
            Some(url) if !url.trim().is_empty() => Ok(url),
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
        assert!(e.contains("unknown field `pool`; accepted: url_env"), "{e}");
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
