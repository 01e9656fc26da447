//! The `otel:` section of a run config or a gateway config, and the standard
//! `OTEL_EXPORTER_OTLP_*` variables: where spans go, over which protocol, and whether
//! prompts and replies travel with them. Compiled with or without the `otel` feature, so
//! that a config is checked the same by every build.

use crate::env::EnvSource;
use serde_json::Value;
use std::time::Duration;

const FIELDS: &str = "endpoint, protocol, contents, service_name, headers_env, timeout, max_queue";
const PROTOCOLS: &str = "grpc, http/protobuf";

/// The default bound of the queue of finished spans waiting for export (the SDK's).
pub const DEFAULT_MAX_QUEUE: usize = 2048;
/// The default time one export may take (the OTLP specification's 10 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How spans are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// OTLP over HTTP, protobuf bodies (`http/protobuf`, the specification's default);
    /// spans are posted to `<endpoint>/v1/traces`.
    #[default]
    HttpProtobuf,
    /// OTLP over gRPC (`grpc`), plaintext HTTP/2.
    Grpc,
}

impl Protocol {
    fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "http/protobuf" | "http" => Some(Protocol::HttpProtobuf),
            "grpc" => Some(Protocol::Grpc),
            _ => None,
        }
    }

    /// The name the `protocol` field and `OTEL_EXPORTER_OTLP_PROTOCOL` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::Grpc => "grpc",
        }
    }
}

/// Where and how spans are exported: on when an endpoint is known.
#[derive(Debug, Clone, PartialEq)]
pub struct OtelConfig {
    /// The collector's base URL (`http://127.0.0.1:4318` for HTTP, `:4317` for gRPC).
    pub endpoint: String,
    /// HTTP (protobuf) or gRPC.
    pub protocol: Protocol,
    /// Whether prompts and replies go on the spans (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`); off by default.
    pub contents: bool,
    /// The resource's `service.name`.
    pub service_name: String,
    /// Headers sent with every export (`k=v,k2=v2`), read from the variable
    /// `headers_env` names; never printed.
    pub headers: Vec<(String, String)>,
    /// How long one export may take before it is given up (its spans counted dropped).
    pub timeout: Duration,
    /// How many finished spans may wait for export; past it, spans are dropped and
    /// counted, never waited for.
    pub max_queue: usize,
}

impl OtelConfig {
    /// A config exporting to `endpoint` with every other field at its default.
    pub fn new(endpoint: impl Into<String>, protocol: Protocol) -> Self {
        OtelConfig {
            endpoint: endpoint.into(),
            protocol,
            contents: false,
            service_name: "switchyard".into(),
            headers: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            max_queue: DEFAULT_MAX_QUEUE,
        }
    }

    /// The URL spans are sent to: for HTTP, the endpoint with `/v1/traces` (unless it
    /// already ends so); for gRPC, the endpoint as written.
    pub fn traces_url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        match self.protocol {
            Protocol::HttpProtobuf if !base.ends_with("/v1/traces") => format!("{base}/v1/traces"),
            _ => base.to_string(),
        }
    }
}

/// The export a config and an environment ask for: `Ok(None)` when off (no `otel:`
/// endpoint and no `OTEL_EXPORTER_OTLP_ENDPOINT`, `otel: off`, or `OTEL_SDK_DISABLED=true`).
/// The section's fields win over the variables; every problem is listed, named with what
/// is accepted.
pub fn resolve(
    section: Option<&Value>,
    env: &dyn EnvSource,
) -> Result<Option<OtelConfig>, Vec<String>> {
    let mut errors = Vec::new();
    let var = |name: &str| env.var(name).filter(|v| !v.trim().is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let mut endpoint = None;
    let mut protocol = None;
    let mut contents = None;
    let mut service_name = None;
    let mut headers_env = None;
    let mut timeout = None;
    let mut max_queue = None;
    match section {
        None | Some(Value::Null) => {}
        // `otel: off` (YAML reads a bare `off` as false) turns the export off even when
        // the environment names an endpoint.
        Some(Value::Bool(false)) => return Ok(None),
        Some(Value::String(s)) if s == "off" => return Ok(None),
        Some(Value::Object(map)) => {
            for (k, v) in map {
                match k.as_str() {
                    "endpoint" => match v.as_str() {
                        Some(s) if valid_url(s) => endpoint = Some(s.to_string()),
                        _ => errors.push(format!(
                            "otel.endpoint: expected an http:// or https:// URL such as http://127.0.0.1:4318, found {v}"
                        )),
                    },
                    "protocol" => match v.as_str().and_then(Protocol::parse) {
                        Some(p) => protocol = Some(p),
                        None => errors.push(format!(
                            "otel.protocol: expected one of {PROTOCOLS}, found {v}"
                        )),
                    },
                    "contents" => match v.as_bool() {
                        Some(b) => contents = Some(b),
                        None => errors.push(format!(
                            "otel.contents: expected true or false, found {v}"
                        )),
                    },
                    "service_name" => match v.as_str() {
                        Some(s) if !s.trim().is_empty() => service_name = Some(s.to_string()),
                        _ => errors.push(format!(
                            "otel.service_name: expected a non-empty text, found {v}"
                        )),
                    },
                    "headers_env" => match v.as_str() {
                        Some(s) if is_var_name(s) => headers_env = Some(s.to_string()),
                        // A value that is not a variable's name may be the headers
                        // themselves (a token): never echoed.
                        _ => errors.push(
                            "otel.headers_env: expected the name of an environment variable holding `key=value,key2=value2` (the headers are never written in the file)".to_string(),
                        ),
                    },
                    "timeout" => match seconds(v) {
                        Some(d) if !d.is_zero() => timeout = Some(d),
                        _ => errors.push(format!(
                            "otel.timeout: expected a positive number of seconds (10) or a text with a unit (\"500ms\", \"30s\"), found {v}"
                        )),
                    },
                    "max_queue" => match v.as_u64() {
                        Some(n) if (1..=1_000_000).contains(&n) => max_queue = Some(n as usize),
                        _ => errors.push(format!(
                            "otel.max_queue: expected a whole number from 1 to 1000000, found {v}"
                        )),
                    },
                    other => {
                        errors.push(format!("otel.{other}: unknown field; accepted: {FIELDS}"))
                    }
                }
            }
        }
        Some(other) => errors.push(format!("otel: expected {{{FIELDS}}} or off, found {other}")),
    }
    let endpoint = endpoint.or_else(|| {
        let v = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))?;
        if valid_url(&v) {
            Some(v)
        } else {
            errors.push(format!(
                "OTEL_EXPORTER_OTLP_ENDPOINT: expected an http:// or https:// URL such as http://127.0.0.1:4318, found `{}`",
                crate::text::preview(v.as_bytes(), 80)
            ));
            None
        }
    });
    let protocol = protocol.or_else(|| {
        let v = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))?;
        let p = Protocol::parse(&v);
        if p.is_none() {
            errors.push(format!(
                "OTEL_EXPORTER_OTLP_PROTOCOL: expected one of {PROTOCOLS}, found `{}`",
                crate::text::preview(v.as_bytes(), 40)
            ));
        }
        p
    });
    let contents = contents.or_else(|| {
        var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
            .map(|v| v.trim().eq_ignore_ascii_case("true"))
    });
    let mut headers = Vec::new();
    if let Some(name) = &headers_env {
        match var(name) {
            Some(text) => match parse_headers(&text) {
                Some(h) => {
                    // A collector's key (`authorization=…`, `x-honeycomb-team=…`).
                    for (_, value) in &h {
                        crate::internal::redact::register(
                            value,
                            &format!("a header value in {name}"),
                        );
                    }
                    headers = h
                }
                None => errors.push(format!(
                    "otel.headers_env: the variable {name} is not `key=value,key2=value2` (its value is not shown)"
                )),
            },
            None => errors.push(format!(
                "otel.headers_env: the variable {name} is not set"
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let Some(endpoint) = endpoint else {
        return Ok(None);
    };
    let mut config = OtelConfig::new(endpoint, protocol.unwrap_or_default());
    if config.protocol == Protocol::Grpc && config.endpoint.starts_with("https://") {
        return Err(vec![format!(
            "otel.protocol: grpc is sent in plaintext by this build; for {} use protocol: http/protobuf (TLS through rustls), or an http:// collector",
            config.endpoint
        )]);
    }
    config.contents = contents.unwrap_or(false);
    if let Some(s) = service_name.or_else(|| var("OTEL_SERVICE_NAME")) {
        config.service_name = s;
    }
    config.headers = headers;
    config.timeout = timeout.unwrap_or(DEFAULT_TIMEOUT);
    config.max_queue = max_queue.unwrap_or(DEFAULT_MAX_QUEUE);
    Ok(Some(config))
}

fn seconds(v: &Value) -> Option<Duration> {
    match v {
        Value::Number(n) => crate::seconds::from_secs(n.as_f64()?),
        Value::String(s) => crate::seconds::parse(s),
        _ => None,
    }
}

fn valid_url(s: &str) -> bool {
    url::Url::parse(s).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

fn is_var_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// `key=value,key2=value2` (the `OTEL_EXPORTER_OTLP_HEADERS` form).
fn parse_headers(text: &str) -> Option<Vec<(String, String)>> {
    text.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let k = k.trim();
            (!k.is_empty()).then(|| (k.to_string(), v.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    struct Env(HashMap<&'static str, &'static str>);
    impl EnvSource for Env {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|s| s.to_string())
        }
    }
    fn env(pairs: &[(&'static str, &'static str)]) -> Env {
        Env(pairs.iter().copied().collect())
    }

    #[test]
    fn off_unless_an_endpoint_is_known() {
        assert_eq!(resolve(None, &env(&[])), Ok(None));
        assert_eq!(
            resolve(Some(&json!({"contents": true})), &env(&[])),
            Ok(None)
        );
        let on = resolve(
            None,
            &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(on.protocol, Protocol::HttpProtobuf);
        assert_eq!(on.traces_url(), "http://c:4318/v1/traces");
        assert!(!on.contents);
        assert_eq!(on.service_name, "switchyard");
        // `otel: off` and OTEL_SDK_DISABLED win over the variable.
        let e = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]);
        assert_eq!(resolve(Some(&json!(false)), &e), Ok(None));
        let d = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]);
        assert_eq!(resolve(None, &d), Ok(None));
    }

    #[test]
    fn the_section_wins_over_the_variables() {
        let e = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTLP_AUTH", "authorization=Bearer t0ken,x-team=a"),
        ]);
        let c = resolve(
            Some(&json!({"endpoint": "http://file:4317", "protocol": "grpc", "contents": true,
                "service_name": "agents", "headers_env": "OTLP_AUTH", "timeout": "500ms", "max_queue": 16})),
            &e,
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.endpoint, "http://file:4317");
        assert_eq!(c.protocol, Protocol::Grpc);
        assert_eq!(c.traces_url(), "http://file:4317");
        assert!(c.contents);
        assert_eq!(c.service_name, "agents");
        assert_eq!(c.headers.len(), 2);
        assert_eq!(c.timeout, Duration::from_millis(500));
        assert_eq!(c.max_queue, 16);
        let g = resolve(
            None,
            &env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(g.protocol, Protocol::Grpc);
    }

    #[test]
    fn every_problem_named_with_what_is_accepted() {
        let e = env(&[("SECRET_HEADERS", "no-equals-sign-t0ken")]);
        let errors = resolve(
            Some(
                &json!({"endpoint": "collector:4318", "protocol": "thrift", "contents": "yes",
                "headers_env": "SECRET_HEADERS", "timeout": 0, "max_queue": 0, "sampler": 1}),
            ),
            &e,
        )
        .unwrap_err();
        assert_eq!(errors.len(), 7, "{errors:?}");
        assert!(errors
            .iter()
            .any(|m| m.starts_with("otel.sampler: unknown field; accepted: endpoint, protocol")));
        assert!(errors
            .iter()
            .any(|m| m.contains("expected one of grpc, http/protobuf")));
        assert!(errors.iter().all(|m| !m.contains("t0ken")), "{errors:?}");
        let errors = resolve(Some(&json!({"headers_env": "Bearer abc"})), &env(&[])).unwrap_err();
        assert!(!errors[0].contains("abc"));
        let errors = resolve(Some(&json!(["x"])), &env(&[])).unwrap_err();
        assert!(errors[0].starts_with("otel: expected {endpoint"));
        let errors = resolve(
            None,
            &env(&[
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ]),
        )
        .unwrap_err();
        assert!(errors[0].contains("grpc, http/protobuf"));
        let errors = resolve(
            Some(&json!({"endpoint": "https://c:4317", "protocol": "grpc"})),
            &env(&[]),
        )
        .unwrap_err();
        assert!(errors[0].contains("plaintext"));
    }
}
