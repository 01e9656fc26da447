//! Routes: a name standing for several references, with a policy saying which member is
//! asked first and when the next one is. Declared under `routes:` in the user's file, the
//! run config or a command-line override (`routes.smart.try=[a/x, b/y]`), layered field by
//! field like backends, and checked against the backends once those are resolved.
//!
//! ```yaml
//! routes:
//!   smart:                       # the members in order: the next one on a listed failure
//!     try: [anthropic/claude-sonnet-4-5, openai/gpt-5.4]
//!     on: [quota, overloaded, rate_limited, transport, timeout, server_error]
//!   qwen:                        # spread over deployments by weight
//!     pick: weighted
//!     members: [{model: vllm-a/qwen, weight: 3}, {model: vllm-b/qwen, weight: 1}]
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_yaml_ng::Value;

use super::patch::{is_backend_name, key_text, type_name, LayerSource};
use super::types::Layer;
use super::Registry;
use crate::config_error::{ConfigError, ConfigProblem, Location};
use crate::error::Error;
use crate::internal::suggest::nearest;
use crate::retry::RetryReason;

/// Every field a route accepts.
pub const ROUTE_FIELDS: &[&str] = &[
    "try",
    "members",
    "pick",
    "on",
    "retry_each",
    "cooldown",
    "max_wait",
];

/// How a route chooses the member asked first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    /// The members in the order written (`try:`): the first that is not cooling down.
    Order,
    /// Spread by weight (a smooth weighted round robin: exact proportions, no randomness).
    Weighted,
    /// The member with the fewest calls in flight through this route.
    LeastBusy,
}

impl Pick {
    /// The accepted names.
    pub const NAMES: &'static [&'static str] = &["order", "weighted", "least_busy"];

    fn parse(s: &str) -> Option<Pick> {
        match s {
            "order" => Some(Pick::Order),
            "weighted" => Some(Pick::Weighted),
            "least_busy" => Some(Pick::LeastBusy),
            _ => None,
        }
    }

    /// The name as written in the config.
    pub fn as_str(self) -> &'static str {
        match self {
            Pick::Order => "order",
            Pick::Weighted => "weighted",
            Pick::LeastBusy => "least_busy",
        }
    }
}

/// A kind of failure that sends a call on to the next member (`on:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackKind {
    /// Out of credit or over a spend limit (`ProviderQuotaExhausted`).
    Quota,
    /// Rate limited (429) once the member's own waits ran out.
    RateLimited,
    /// 503, Anthropic 529.
    Overloaded,
    /// Another 5xx.
    ServerError,
    /// The connection failed or broke before any output.
    Transport,
    /// A timeout before any output.
    Timeout,
    /// A success that is not a reply.
    Malformed,
    /// The provider refused the prompt as too long for its window.
    ContextLength,
}

impl FallbackKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: &'static [FallbackKind] = &[
        FallbackKind::Quota,
        FallbackKind::RateLimited,
        FallbackKind::Overloaded,
        FallbackKind::ServerError,
        FallbackKind::Transport,
        FallbackKind::Timeout,
        FallbackKind::Malformed,
        FallbackKind::ContextLength,
    ];

    /// The accepted names.
    pub const NAMES: &'static [&'static str] = &[
        "quota",
        "rate_limited",
        "overloaded",
        "server_error",
        "transport",
        "timeout",
        "malformed",
        "context_length",
    ];

    /// What `on:` is when a route does not say: every failure another provider may not
    /// share (a malformed reply or a too-long prompt are as likely to repeat elsewhere).
    pub const DEFAULT: &'static [FallbackKind] = &[
        FallbackKind::Quota,
        FallbackKind::RateLimited,
        FallbackKind::Overloaded,
        FallbackKind::ServerError,
        FallbackKind::Transport,
        FallbackKind::Timeout,
    ];

    /// The name as written in the config.
    pub fn as_str(self) -> &'static str {
        let i = FallbackKind::ALL
            .iter()
            .position(|k| *k == self)
            .unwrap_or(0);
        FallbackKind::NAMES[i]
    }

    fn parse(s: &str) -> Option<FallbackKind> {
        let i = FallbackKind::NAMES.iter().position(|n| *n == s)?;
        FallbackKind::ALL.get(i).copied()
    }

    /// The kind of `error`, when it is one a route may fall back on.
    pub fn of(error: &Error) -> Option<FallbackKind> {
        match error {
            Error::ProviderQuotaExhausted(_) => Some(FallbackKind::Quota),
            Error::ContextLengthExceeded { .. } => Some(FallbackKind::ContextLength),
            other => RetryReason::of(other).map(|r| match r {
                RetryReason::RateLimited => FallbackKind::RateLimited,
                RetryReason::Malformed => FallbackKind::Malformed,
                RetryReason::Overloaded => FallbackKind::Overloaded,
                RetryReason::ServerError => FallbackKind::ServerError,
                RetryReason::Transport => FallbackKind::Transport,
                RetryReason::Timeout => FallbackKind::Timeout,
            }),
        }
    }
}

/// One member of a route.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Member {
    /// The reference as written (`vllm-a/qwen`).
    pub reference: String,
    /// Its share of a weighted route (1 when not written).
    pub weight: u32,
}

/// A resolved route.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    /// Its name, used wherever a reference is.
    pub name: String,
    /// The members, in the order written.
    pub members: Vec<Member>,
    /// How the first member is chosen.
    pub pick: Pick,
    /// The failures that send a call to the next member.
    pub on: Vec<FallbackKind>,
    /// Whether each member's own retries run before the next member is tried (default
    /// true); false falls back at the first listed failure.
    pub retry_each: bool,
    /// How long a member that failed with a listed kind is skipped when the provider did
    /// not say (`Retry-After`). Default 30 s.
    pub cooldown: Duration,
    /// When every member is cooling down, the longest wait for the first to come back;
    /// past it the call fails at once naming each member's state. Default 30 s.
    pub max_wait: Duration,
    /// The highest layer that wrote it.
    pub layer: Layer,
    /// Where that layer declared it.
    #[serde(skip)]
    pub location: Location,
}

impl Route {
    /// Whether a failure of `kind` sends the call on.
    pub fn falls_back_on(&self, kind: FallbackKind) -> bool {
        self.on.contains(&kind)
    }
}

/// What one layer writes about one route.
#[derive(Debug, Clone)]
pub(crate) struct RoutePatch {
    name: String,
    layer: Layer,
    location: Location,
    members: Option<Vec<(Member, Location)>>,
    pick: Option<Pick>,
    on: Option<Vec<FallbackKind>>,
    retry_each: Option<bool>,
    cooldown: Option<Duration>,
    max_wait: Option<Duration>,
}

/// Parses one layer's `routes:` mapping (`src.prefix` is `["routes"]`).
pub(crate) fn parse_routes(
    src: &LayerSource<'_>,
    value: &Value,
    errors: &mut Vec<ConfigError>,
) -> Vec<RoutePatch> {
    let map = match value {
        Value::Null => return Vec::new(),
        Value::Mapping(m) => m,
        other => {
            errors.push(src_err(
                src,
                &[],
                "routes",
                "a mapping of route names to their members and policy",
                other,
            ));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (k, v) in map {
        let name = key_text(k);
        if !is_backend_name(&name) {
            errors.push(ConfigError::new(
                src.loc(&[&name]),
                ConfigProblem::Invalid {
                    field: format!("routes.{name}"),
                    message: format!(
                        "invalid route name `{name}`: use letters, digits, `-` and `_`, starting with a letter"
                    ),
                },
            ));
            continue;
        }
        if let Some(p) = parse_route(src, &name, v, errors) {
            out.push(p);
        }
    }
    out
}

fn src_err(
    src: &LayerSource<'_>,
    path: &[&str],
    field: &str,
    expected: &str,
    found: &Value,
) -> ConfigError {
    ConfigError::new(
        src.loc(path),
        ConfigProblem::WrongType {
            field: field.to_string(),
            expected: expected.to_string(),
            found: type_name(found).to_string(),
        },
    )
}

fn parse_route(
    src: &LayerSource<'_>,
    name: &str,
    value: &Value,
    errors: &mut Vec<ConfigError>,
) -> Option<RoutePatch> {
    let mut patch = RoutePatch {
        name: name.to_string(),
        layer: src.layer.clone(),
        location: src.loc(&[name]),
        members: None,
        pick: None,
        on: None,
        retry_each: None,
        cooldown: None,
        max_wait: None,
    };
    let fields = match value {
        // `smart: [a/x, b/y]`: the members in order, every other field its default.
        Value::Sequence(_) => {
            patch.members = parse_members(src, name, "try", value, errors);
            return Some(patch);
        }
        Value::Mapping(m) => m,
        other => {
            errors.push(src_err(
                src,
                &[name],
                &format!("routes.{name}"),
                "a mapping (`try:` or `members:`, `pick:`, `on:`…) or a list of references",
                other,
            ));
            return None;
        }
    };
    for (fk, fv) in fields {
        let field = key_text(fk);
        let path = [name, field.as_str()];
        let dotted = format!("routes.{name}.{field}");
        match field.as_str() {
            "try" | "members" => {
                if patch.members.is_some() {
                    errors.push(ConfigError::new(
                        src.loc(&path),
                        ConfigProblem::Invalid {
                            field: dotted,
                            message: format!(
                                "route `{name}` has both `try` and `members`: write its members once"
                            ),
                        },
                    ));
                    continue;
                }
                patch.members = parse_members(src, name, &field, fv, errors);
                if field == "try" && patch.pick.is_none() {
                    patch.pick = Some(Pick::Order);
                }
            }
            "pick" => {
                patch.pick = closed(
                    src,
                    &path,
                    &dotted,
                    "pick",
                    fv,
                    Pick::NAMES,
                    Pick::parse,
                    errors,
                );
            }
            "on" => {
                let Value::Sequence(items) = fv else {
                    errors.push(src_err(
                        src,
                        &path,
                        &dotted,
                        &format!(
                            "a list of failure kinds among {}",
                            FallbackKind::NAMES.join(", ")
                        ),
                        fv,
                    ));
                    continue;
                };
                let mut kinds = Vec::new();
                for item in items {
                    if let Some(k) = closed(
                        src,
                        &path,
                        &dotted,
                        "failure kind",
                        item,
                        FallbackKind::NAMES,
                        FallbackKind::parse,
                        errors,
                    ) {
                        if !kinds.contains(&k) {
                            kinds.push(k);
                        }
                    }
                }
                patch.on = Some(kinds);
            }
            "retry_each" => match fv {
                Value::Bool(b) => patch.retry_each = Some(*b),
                other => errors.push(src_err(src, &path, &dotted, "true or false", other)),
            },
            "cooldown" | "max_wait" => {
                let parsed = match fv {
                    Value::Number(n) => n.as_f64().and_then(crate::seconds::from_secs),
                    Value::String(s) => crate::seconds::parse(s),
                    _ => None,
                };
                match parsed {
                    Some(d) if field == "cooldown" => patch.cooldown = Some(d),
                    Some(d) => patch.max_wait = Some(d),
                    None => errors.push(ConfigError::new(
                        src.loc(&path),
                        ConfigProblem::Invalid {
                            field: dotted.clone(),
                            message: format!("`{dotted}` must be {}", crate::seconds::ACCEPTED),
                        },
                    )),
                }
            }
            other => errors.push(ConfigError::new(
                src.loc(&path),
                ConfigProblem::UnknownField {
                    what: "route field".into(),
                    field: other.to_string(),
                    accepted: ROUTE_FIELDS.iter().map(|s| s.to_string()).collect(),
                    nearest: nearest(other, ROUTE_FIELDS.iter().copied()),
                },
            )),
        }
    }
    Some(patch)
}

#[allow(clippy::too_many_arguments)]
fn closed<T>(
    src: &LayerSource<'_>,
    path: &[&str],
    dotted: &str,
    what: &str,
    v: &Value,
    accepted: &[&str],
    parse: fn(&str) -> Option<T>,
    errors: &mut Vec<ConfigError>,
) -> Option<T> {
    let Value::String(s) = v else {
        errors.push(src_err(
            src,
            path,
            dotted,
            &format!("one of {}", accepted.join(", ")),
            v,
        ));
        return None;
    };
    let parsed = parse(s);
    if parsed.is_none() {
        errors.push(ConfigError::new(
            src.loc(path),
            ConfigProblem::UnknownValue {
                what: what.into(),
                field: dotted.to_string(),
                value: s.clone(),
                accepted: accepted.iter().map(|a| a.to_string()).collect(),
                nearest: nearest(s, accepted.iter().copied()),
            },
        ));
    }
    parsed
}

/// `[a/x, b/y]` or `[{model: a/x, weight: 3}, …]` (the two forms may mix).
fn parse_members(
    src: &LayerSource<'_>,
    name: &str,
    field: &str,
    value: &Value,
    errors: &mut Vec<ConfigError>,
) -> Option<Vec<(Member, Location)>> {
    let dotted = format!("routes.{name}.{field}");
    let Value::Sequence(items) = value else {
        errors.push(src_err(
            src,
            &[name, field],
            &dotted,
            "a list of references (`[a/x, b/y]`) or of `{model: <reference>, weight: <n>}`",
            value,
        ));
        return None;
    };
    let mut out = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let index = i.to_string();
        let path = [name, field, index.as_str()];
        let loc = src.loc(&path);
        let member = match item {
            Value::String(s) => Some(Member {
                reference: s.clone(),
                weight: 1,
            }),
            Value::Mapping(m) => member_mapping(src, &path, &dotted, m, errors),
            other => {
                errors.push(src_err(
                    src,
                    &path,
                    &format!("{dotted}[{i}]"),
                    "a reference or `{model: <reference>, weight: <n>}`",
                    other,
                ));
                None
            }
        };
        match member {
            Some(m) => out.push((m, loc)),
            None => ok = false,
        }
    }
    if ok && out.is_empty() {
        errors.push(ConfigError::new(
            src.loc(&[name, field]),
            ConfigProblem::Invalid {
                field: dotted,
                message: format!("route `{name}` has no members: list at least one reference"),
            },
        ));
        return None;
    }
    ok.then_some(out)
}

fn member_mapping(
    src: &LayerSource<'_>,
    path: &[&str],
    dotted: &str,
    m: &serde_yaml_ng::Mapping,
    errors: &mut Vec<ConfigError>,
) -> Option<Member> {
    let mut reference = None;
    let mut weight = 1u32;
    let mut ok = true;
    for (k, v) in m {
        let key = key_text(k);
        match (key.as_str(), v) {
            ("model", Value::String(s)) => reference = Some(s.clone()),
            ("weight", Value::Number(n))
                if n.as_u64().is_some_and(|w| (1..=1_000_000).contains(&w)) =>
            {
                weight = n.as_u64().map_or(1, |w| w as u32);
            }
            ("model" | "weight", other) => {
                ok = false;
                errors.push(ConfigError::new(
                    src.loc(path),
                    ConfigProblem::WrongType {
                        field: format!("{dotted}.{key}"),
                        expected: if key == "model" {
                            "a reference `<backend>/<model id>`".into()
                        } else {
                            "a whole number from 1 to 1000000".into()
                        },
                        found: match other {
                            Value::Number(n) => format!("{n}"),
                            o => type_name(o).to_string(),
                        },
                    },
                ));
            }
            (other, _) => {
                ok = false;
                errors.push(ConfigError::new(
                    src.loc(path),
                    ConfigProblem::UnknownField {
                        what: "route member field".into(),
                        field: other.to_string(),
                        accepted: vec!["model".into(), "weight".into()],
                        nearest: nearest(other, ["model", "weight"]),
                    },
                ));
            }
        }
    }
    match (ok, reference) {
        (true, Some(reference)) => Some(Member { reference, weight }),
        (true, None) => {
            errors.push(ConfigError::new(
                src.loc(path),
                ConfigProblem::Invalid {
                    field: dotted.to_string(),
                    message: format!("a member of `{dotted}` needs `model: <reference>`"),
                },
            ));
            None
        }
        (false, _) => None,
    }
}

/// Folds the patches (lowest layer first) into routes and checks each against the
/// resolved backends: every member a reference to a known backend (the nearest name
/// when not), no route named like a backend.
pub(crate) fn resolve_routes(
    patches: &[RoutePatch],
    registry: &Registry,
    errors: &mut Vec<ConfigError>,
) -> BTreeMap<String, Route> {
    let mut by_name: BTreeMap<&str, Vec<&RoutePatch>> = BTreeMap::new();
    for p in patches {
        by_name.entry(p.name.as_str()).or_default().push(p);
    }
    let mut out = BTreeMap::new();
    for (name, layers) in by_name {
        let Some(top) = layers.last() else { continue };
        let last = |f: fn(&RoutePatch) -> bool| layers.iter().rev().find(|p| f(p));
        if registry.backend(name).is_some() {
            errors.push(ConfigError::new(
                top.location.clone(),
                ConfigProblem::Invalid {
                    field: format!("routes.{name}"),
                    message: format!(
                        "route `{name}` has the name of a backend: `{name}/<model>` would mean both; rename the route"
                    ),
                },
            ));
            continue;
        }
        let Some(members) = last(|p| p.members.is_some()).and_then(|p| p.members.clone()) else {
            errors.push(ConfigError::new(
                top.location.clone(),
                ConfigProblem::Invalid {
                    field: format!("routes.{name}"),
                    message: format!(
                        "route `{name}` has no members: give it `try: [<reference>, …]` or `members: [{{model: <reference>, weight: <n>}}, …]`"
                    ),
                },
            ));
            continue;
        };
        let mut ok = true;
        for (m, loc) in &members {
            let problem = if by_name_is_route(patches, &m.reference) {
                Some(format!(
                    "member `{}` of route `{name}` is a route; a route's members are references `<backend>/<model id>`",
                    m.reference
                ))
            } else {
                registry
                    .require_reference(&m.reference)
                    .err()
                    .map(|e| format!("member `{}` of route `{name}`: {e}", m.reference))
            };
            if let Some(message) = problem {
                ok = false;
                errors.push(ConfigError::new(
                    loc.clone(),
                    ConfigProblem::Invalid {
                        field: format!("routes.{name}"),
                        message,
                    },
                ));
            }
        }
        if !ok {
            continue;
        }
        let pick = last(|p| p.pick.is_some())
            .and_then(|p| p.pick)
            .unwrap_or(Pick::Order);
        let route = Route {
            name: name.to_string(),
            members: members.into_iter().map(|(m, _)| m).collect(),
            pick,
            on: last(|p| p.on.is_some())
                .and_then(|p| p.on.clone())
                .unwrap_or_else(|| FallbackKind::DEFAULT.to_vec()),
            retry_each: last(|p| p.retry_each.is_some())
                .and_then(|p| p.retry_each)
                .unwrap_or(true),
            cooldown: last(|p| p.cooldown.is_some())
                .and_then(|p| p.cooldown)
                .unwrap_or(DEFAULT_COOLDOWN),
            max_wait: last(|p| p.max_wait.is_some())
                .and_then(|p| p.max_wait)
                .unwrap_or(DEFAULT_MAX_WAIT),
            layer: top.layer.clone(),
            location: top.location.clone(),
        };
        out.insert(name.to_string(), route);
    }
    out
}

/// A member's cooldown when its provider did not say how long.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(30);
/// The longest wait for a cooling member when all are cooling.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(30);

fn by_name_is_route(patches: &[RoutePatch], text: &str) -> bool {
    !text.contains('/') && patches.iter().any(|p| p.name == text)
}

/// The route patches of the `routes.*` overrides: `routes.<name>.<field>=<value>`, or
/// `routes.<name>=<value>` for the whole route.
pub(crate) fn override_patches(
    overrides: &[super::Override],
    errors: &mut Vec<ConfigError>,
) -> Vec<RoutePatch> {
    let mut out = Vec::new();
    for o in overrides.iter().filter(|o| o.path[0] == "routes") {
        let label = format!("override `{}`", super::redacted(&o.text));
        if o.path.len() < 2 || o.path.len() > 3 {
            errors.push(ConfigError::new(
                Location::source(label),
                ConfigProblem::Invalid {
                    field: "routes".into(),
                    message: "a routes override is `routes.<name>=<route>` or `routes.<name>.<field>=<value>`".into(),
                },
            ));
            continue;
        }
        let Ok(mut value) = serde_yaml_ng::to_value(&o.value) else {
            continue;
        };
        for seg in o.path[1..].iter().rev() {
            let mut m = serde_yaml_ng::Mapping::new();
            m.insert(Value::String(seg.clone()), value);
            value = Value::Mapping(m);
        }
        let src = LayerSource {
            layer: Layer::Override,
            label,
            spans: None,
            prefix: Vec::new(),
        };
        out.extend(parse_routes(&src, &value, errors));
    }
    out
}
