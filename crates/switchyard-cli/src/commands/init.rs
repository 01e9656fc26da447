//! `switchyard init`: write a backend's key into an env file, or, for a Google ADC
//! backend, check that the credentials and the project can be found.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use switchyard::env::file::{self as env_file, EnvFile, SetOutcome};
use switchyard::env::EnvSource;
use switchyard::registry::{Auth, Backend};

use super::CliEnv;
use crate::cli::InitArgs;

/// Runs `init`.
pub(super) fn run(
    config: Option<PathBuf>,
    env_file: Option<&Path>,
    args: &InitArgs,
) -> Result<(), String> {
    // Variables already in the env file count (e.g. GOOGLE_CLOUD_PROJECT written there).
    if let Some(path) = env_file.filter(|p| p.exists()) {
        let file = EnvFile::load(path).map_err(|e| format!("error: {e}"))?;
        let _ = super::ENV_FILE.set(file);
    }
    let loaded = super::load(config, args.overrides.clone())?;
    let Some(backend) = loaded.registry.backend(&args.backend) else {
        let known: Vec<&str> = loaded.registry.names().collect();
        let hint = switchyard::internal::suggest::nearest(&args.backend, known.iter().copied())
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(format!(
            "error: no backend is called `{}`{hint}; known backends: {}",
            args.backend,
            known.join(", ")
        ));
    };
    if backend.auth.value == Auth::GoogleAdc {
        return google_adc(backend, env_file);
    }
    if backend.uses_no_key() {
        println!(
            "backend `{}` needs no key (kind {}, auth {}): nothing to write",
            backend.name, backend.kind.value, backend.auth.value
        );
        return Ok(());
    }
    let var = &backend.api_key_env.value;
    let key = read_key(args)?;
    let Some(key) = key else {
        if !backend.key_required.value {
            println!(
                "backend `{}` needs no key (key_required: false); to write {var} anyway, give --api-key-stdin",
                backend.name
            );
            return Ok(());
        }
        return Err(format!(
            "error: give the key of backend `{}` with --api-key-stdin (or --api-key KEY); it is written as {var}",
            backend.name
        ));
    };
    let Some(path) = env_file else {
        return Err(
            "error: `init` needs --env-file FILE, the file to write (e.g. --env-file .env.switchyard)"
                .into(),
        );
    };
    let outcome = env_file::set_var(path, var, &key).map_err(|e| format!("error: {e}"))?;
    // Standard output holds the variable's name alone, for scripts; never the key.
    println!("{var}");
    eprintln!(
        "wrote {var} to {} ({}, mode 0600); backend `{}` reads {var}. Use it with `switchyard --env-file {} ...`",
        path.display(),
        match outcome {
            SetOutcome::Created => "a new file",
            SetOutcome::Replaced => "its line replaced",
            SetOutcome::Added => "added at the end",
        },
        backend.name,
        path.display()
    );
    Ok(())
}

/// The key from `--api-key` or one line of standard input; `None` when neither is given.
fn read_key(args: &InitArgs) -> Result<Option<String>, String> {
    let key = if let Some(k) = &args.api_key {
        k.clone()
    } else if args.api_key_stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| format!("error: cannot read the key from standard input: {e}"))?;
        line
    } else {
        return Ok(None);
    };
    let key = key.trim().to_string();
    if key.is_empty() {
        return Err("error: the key given is empty".into());
    }
    if key.contains(char::is_whitespace) {
        return Err("error: the key given holds a blank; give the key alone".into());
    }
    Ok(Some(key))
}

/// The gcloud ADC file: `$CLOUDSDK_CONFIG/application_default_credentials.json`, else
/// `~/.config/gcloud/application_default_credentials.json`.
fn gcloud_adc_file(env: &dyn EnvSource) -> Option<PathBuf> {
    let dir = match env.var("CLOUDSDK_CONFIG") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env.var("HOME")?)
            .join(".config")
            .join("gcloud"),
    };
    Some(dir.join("application_default_credentials.json"))
}

/// Checks what a Google ADC backend needs; writes nothing.
fn google_adc(backend: &Backend, env_file: Option<&Path>) -> Result<(), String> {
    let env = CliEnv;
    let mut missing: Vec<String> = Vec::new();
    match env.var("GOOGLE_APPLICATION_CREDENTIALS") {
        Some(path) if Path::new(&path).is_file() => {
            // The env file's value is used too: the library reads the key file it names.
            println!("credentials: {path} (GOOGLE_APPLICATION_CREDENTIALS)");
        }
        Some(path) => missing.push(format!(
            "GOOGLE_APPLICATION_CREDENTIALS names {path}, which is not a file: point it at a service account key file, \
             or unset it and run `gcloud auth application-default login`"
        )),
        None => match gcloud_adc_file(&env) {
            Some(f) if f.is_file() => println!("credentials: {} (gcloud application default)", f.display()),
            other => missing.push(format!(
                "no Application Default Credentials found{}: run `gcloud auth application-default login` \
                 (or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file)",
                other
                    .map(|f| format!(" (looked for {})", f.display()))
                    .unwrap_or_default()
            )),
        },
    }
    let file_hint = env_file
        .map(|p| {
            format!(
                " (e.g. add `GOOGLE_CLOUD_PROJECT=<project id>` to {})",
                p.display()
            )
        })
        .unwrap_or_default();
    match env.var("GOOGLE_CLOUD_PROJECT") {
        Some(p) => println!("project: {p} (GOOGLE_CLOUD_PROJECT)"),
        None => missing.push(format!(
            "GOOGLE_CLOUD_PROJECT is not set: set it to your project id{file_hint}; `gcloud config get-value project` prints the current one"
        )),
    }
    // The location has a default in the built-in URLs (`global`, as google-genai's).
    if backend.name == "vertex" {
        match env.var("GOOGLE_CLOUD_LOCATION") {
            Some(l) => println!("location: {l} (GOOGLE_CLOUD_LOCATION)"),
            None => println!(
                "location: global (the default; set GOOGLE_CLOUD_LOCATION for a region such as us-central1)"
            ),
        }
    }
    // Other placeholders of the backend's URLs without a default.
    let mut vars: Vec<String> = Vec::new();
    for d in &backend.apis.value {
        if let Err(switchyard::registry::EndpointError::UnsetVariable { variable, .. }) =
            backend.endpoint(*d, "model", false, &env)
        {
            if variable != "GOOGLE_CLOUD_PROJECT" && !vars.contains(&variable) {
                vars.push(variable);
            }
        }
    }
    for v in vars {
        missing.push(format!(
            "{v} is not set: backend `{}` needs it in its URL (e.g. `{v}=global` or a region such as us-central1)",
            backend.name
        ));
    }
    if missing.is_empty() {
        println!(
            "backend `{}` uses Application Default Credentials: no key to write; ready",
            backend.name
        );
        Ok(())
    } else {
        let mut out = format!(
            "error: backend `{}` uses Application Default Credentials (no key to write), and:",
            backend.name
        );
        for m in missing {
            out.push_str("\n  ");
            out.push_str(&m);
        }
        Err(out)
    }
}
