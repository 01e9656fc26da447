//! The run directory: `run.yaml` (the resolved configuration, written at the start) and
//! `llm_log/` (one record per call).

use crate::registry::{Backend, Kind, Registry};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folder of call records inside a run directory.
pub const LOG_DIR: &str = "llm_log";
/// The resolved configuration of a run.
pub const RUN_FILE: &str = "run.yaml";

/// What `run.yaml` holds: the roles, the backends they use (every field with the layer it
/// came from), and the run's settings (budget, retry, timeouts… as configured).
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    roles: BTreeMap<String, Value>,
    backends: BTreeMap<String, Value>,
    settings: Map<String, Value>,
    replay_of: Option<String>,
}

impl RunInfo {
    /// An empty description.
    pub fn new() -> Self {
        RunInfo::default()
    }

    /// Adds a role (`""` for calls made without one) with its reference, and the backend
    /// it calls, resolved from `registry`.
    pub fn role(
        mut self,
        role: &str,
        reference: &str,
        backend: &str,
        model: &str,
        registry: &Registry,
    ) -> Self {
        match registry.backend(backend) {
            Some(b) => self.role_of(role, reference, model, b),
            None => {
                self.roles.insert(
                    role.to_string(),
                    json!({"reference": reference, "backend": backend, "model": model}),
                );
                self
            }
        }
    }

    /// Adds a role with its reference and the backend it calls, as resolved (a role's
    /// inline endpoint, the anonymous backend `role:<name>`, included).
    pub fn role_of(mut self, role: &str, reference: &str, model: &str, backend: &Backend) -> Self {
        self.roles.insert(
            role.to_string(),
            json!({"reference": reference, "backend": backend.name, "model": model}),
        );
        if let Ok(v) = serde_json::to_value(backend) {
            self.backends.insert(backend.name.clone(), v);
        }
        // A replay answers with the calls of the run it replays, which keep their
        // backends: described as that run describes them, a replay of this run reads them
        // alike (a CLI agent's output by the kind of its backend).
        if backend.kind.value == Kind::Replay {
            if let Some(log) = &backend.log {
                self = self.backends_of(Path::new(&log.value));
            }
        }
        self
    }

    /// Adds the backends the run in `log` (its directory or its `llm_log/`) describes,
    /// but for those already described.
    fn backends_of(mut self, log: &Path) -> Self {
        let Ok(run) = read_run_file(&run_dir_of(log)) else {
            return self;
        };
        if let Some(Value::Object(backends)) = run.get("backends") {
            for (name, value) in backends {
                self.backends
                    .entry(name.clone())
                    .or_insert_with(|| value.clone());
            }
        }
        self
    }

    /// Adds a role whose backend is described by `backend_value` as another run's
    /// `run.yaml` has it (a replay keeps the recorded run's description).
    pub fn recorded_role(
        mut self,
        role: &str,
        reference: &str,
        backend: &str,
        model: &str,
        backend_value: Option<&Value>,
    ) -> Self {
        self.roles.insert(
            role.to_string(),
            json!({"reference": reference, "backend": backend, "model": model}),
        );
        if let Some(v) = backend_value {
            self.backends.insert(backend.to_string(), v.clone());
        }
        self
    }

    /// The run's settings: the run config's sections other than `backends` (budget,
    /// retry, timeouts…), as configured.
    pub fn settings(mut self, sections: &BTreeMap<String, Value>) -> Self {
        for (k, v) in sections {
            self.settings.insert(k.clone(), v.clone());
        }
        self
    }

    /// Marks the run as a replay of another run's directory.
    pub fn replay_of(mut self, run_dir: &Path) -> Self {
        self.replay_of = Some(run_dir.display().to_string());
        self
    }

    /// The document written to `run.yaml`, with any field named like a key redacted.
    pub fn to_value(&self) -> Value {
        let mut v = json!({
            "format": super::FORMAT,
            "switchyard": env!("CARGO_PKG_VERSION"),
            "started_at": super::timestamp(std::time::SystemTime::now()),
            "roles": self.roles,
            "backends": self.backends,
            "settings": self.settings,
        });
        if let Some(r) = &self.replay_of {
            v["replay_of"] = json!(r);
        }
        redact(&mut v);
        v
    }
}

/// Replaces the value of every field named like a key (`api_key`, `token`…).
fn redact(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if !crate::secrets::is_key_field(k) || val.is_null() {
                    redact(val);
                } else if let Some(inner) = val.get_mut("value") {
                    // A resolved field: `{value, layer}`; the layer stays readable.
                    *inner = json!("<redacted>");
                } else {
                    *val = json!("<redacted>");
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// The run directory `path` names: itself, or its parent when it is the `llm_log/` folder.
pub fn run_dir_of(path: &Path) -> PathBuf {
    if path.file_name().is_some_and(|n| n == LOG_DIR) {
        path.parent().unwrap_or(path).to_path_buf()
    } else {
        path.to_path_buf()
    }
}

/// Reads a run's `run.yaml` as JSON.
pub fn read_run_file(run_dir: &Path) -> crate::Result<Value> {
    let path = run_dir.join(RUN_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        crate::Error::Config(format!(
            "cannot read {}: {e} (a run directory holds run.yaml and llm_log/)",
            path.display()
        ))
    })?;
    serde_yaml_ng::from_str::<Value>(&text)
        .map_err(|e| crate::Error::Config(format!("{}: not a run file: {e}", path.display())))
}
