//! The config loader: a run config given as text goes through the whole load (YAML, the
//! span index that locates errors, the `backends:` patches over the built-ins, the other
//! sections) with no file and no environment read. No panic, and a config that loads
//! has a backend for every name it lists.
#![no_main]

use std::path::Path;
use switchyard::env::MapEnv;
use switchyard::registry::{Config, LoadOptions};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = MapEnv::default();
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    match Config::load_run_config_text(&opts, Path::new("run.yaml"), text) {
        Ok(config) => {
            for name in config.registry.names() {
                assert!(config.registry.backend(name).is_some());
            }
        }
        Err(errors) => {
            // Every problem renders (the CLI prints them all).
            assert!(!errors.0.is_empty());
            let _ = errors.to_string();
        }
    }
});
