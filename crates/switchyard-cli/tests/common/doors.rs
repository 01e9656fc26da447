//! The door-equivalence tests' helpers (`doors.rs`, `doors_gateway.rs`): a run config
//! written to a directory, a role called through a `Run`, and a record made comparable
//! between doors.

use std::path::Path;

/// A role with a model (a route of two members), settings, a retry schedule, a cache and
/// a budget.
pub(crate) const CONFIG: &str = "\
routes:
  pair: {pick: order, members: [{model: mock/mock-small}, {model: mock/mock-large}]}
llm:
  planner: {model: pair, temperature: 0.25, max_tokens: 50, stop: [\"END\"]}
  reviewer: mock/echo
retry:
  rate_limited: [\"10ms\"]
timeouts:
  timeout_seconds: 30
budget:
  max_calls: 10
cache: {mode: read-write, temperature_above_zero: true}
";

/// Writes `text` as `run.yaml` in `dir`.
pub(crate) fn write_config(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("run.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Calls `role` through a `Run`, recording into `log`.
pub(crate) fn through_run(config: &Path, overrides: &[String], role: &str, prompt: &str) {
    let env = switchyard::env::MapEnv::default();
    let run = switchyard::Run::builder(config)
        .overrides(overrides.iter().cloned())
        .env(&env)
        .user_file(false)
        .open()
        .unwrap();
    let llm = run.llm(role).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(llm.complete(switchyard::Request::user(prompt)))
        .unwrap();
    run.recorder().unwrap().close().unwrap();
}

/// A record as JSON without what differs between two calls made alike: times, durations
/// and the provider's reply ids.
pub(crate) fn comparable(dir: &Path) -> serde_json::Value {
    let records = switchyard::record::read_records(dir).unwrap();
    assert_eq!(records.len(), 1, "one call recorded in {}", dir.display());
    let mut value = serde_json::to_value(&records[0]).unwrap();
    strip(&mut value);
    // The gateway writes record format 3 (its canonical forms derived when read), a run
    // format 2: read back they are the same record, bar the format's number.
    if let Some(map) = value.as_object_mut() {
        map.remove("format");
    }
    value
}

pub(crate) fn strip(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            // The provider's reply as received: its own id differs from call to call.
            if let Some(data) = map.get_mut("data") {
                if let Some(mut raw) = data
                    .as_str()
                    .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                {
                    strip(&mut raw);
                    *data = raw;
                }
            }
            for key in [
                "timings",
                "started_at",
                "ended_at",
                "duration_ms",
                "first_byte_ms",
                "id",
            ] {
                map.remove(key);
            }
            map.values_mut().for_each(strip);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}
