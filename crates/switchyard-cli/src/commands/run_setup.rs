//! `ask --replay`: the one door option the library's assembly does not make. A replay
//! answers from a recorded run with that run's reference, model and prices, whatever the
//! current config says; the run config's `retry:`/`timeouts:`, budget and run directory
//! still apply, read by the library's own readers.

use std::path::Path;
use std::sync::Arc;

use switchyard::record::RecorderOptions;
use switchyard::registry::Config;
use switchyard::{Budget, BudgetTracker, Llm, Recorder, RunInfo};

use crate::cli::AskArgs;

/// The handle answering from `replayed`, with the run's policy, budget and recorder.
pub(super) fn replaying(
    config: &Config,
    replayed: &Path,
    args: &AskArgs,
) -> Result<(Llm, Option<Arc<Recorder>>), String> {
    let err = |e: switchyard::Error| format!("error: {e}");
    let policy = switchyard::run::call_policy(config).map_err(err)?;
    let mut llm = Llm::replaying(replayed, args.role.as_deref())
        .map_err(err)?
        .with_policy(policy);
    if let Some(role) = &args.role {
        llm = llm.with_role(role.clone());
    }
    // `--log` wins over the config's `log:` (and its override `log=<dir>`).
    let dir = match &args.log {
        Some(dir) => Some(dir.clone()),
        None => switchyard::run::log_dir(config).map_err(err)?,
    };
    if let Some(budget) = Budget::from_sections(&config.sections).map_err(err)? {
        budget
            .check_prices([("", llm.label(), llm.price())])
            .map_err(err)?;
        // Resuming a run, the budget starts from what its recorded calls spent.
        let resumed = dir.as_deref().filter(|_| args.resume);
        let tracker = BudgetTracker::for_run(budget, resumed).map_err(err)?;
        llm = llm.with_budget(Arc::new(tracker));
    }
    let Some(dir) = dir else {
        return Ok((llm, None));
    };
    let role = args.role.as_deref().unwrap_or("");
    // The replayed run's description of its calls, whatever the current config says.
    let mut info = RunInfo::new()
        .settings(&config.sections)
        .replay_of(replayed);
    if let Ok(log) = switchyard::ReplayLog::open(replayed) {
        if let Some(recorded) = log.role(role).or_else(|| log.role("")) {
            let backend = log
                .run_file()
                .get("backends")
                .and_then(|b| b.get(&recorded.backend));
            info = info.recorded_role(
                role,
                &recorded.reference,
                &recorded.backend,
                &recorded.model,
                backend,
            );
        }
    }
    let recorder = Recorder::create(
        &dir,
        &info,
        RecorderOptions {
            resume: args.resume,
            ..RecorderOptions::default()
        },
    )
    .map_err(err)?;
    Ok((llm.with_recorder(recorder.clone()), Some(recorder)))
}
