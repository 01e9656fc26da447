//! The run directory: `run.yaml` (the resolved configuration, written at the start) and
//! `llm_log/` (one record per call).

use crate::registry::Registry;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

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
        self.roles.insert(
            role.to_string(),
            json!({"reference": reference, "backend": backend, "model": model}),
        );
        if let Some(b) = registry.backend(backend) {
            if let Ok(v) = serde_json::to_value(b) {
                self.backends.insert(backend.to_string(), v);
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
