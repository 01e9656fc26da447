//! What a command that makes calls adds to its handle: the run directory it records
//! into (`--log`, `log=` or `log:`), and the budget of the run config.

use std::sync::Arc;

use switchyard::record::RecorderOptions;
use switchyard::registry::Config;
use switchyard::{Budget, BudgetTracker, Llm, Recorder, RunInfo};

use crate::cli::AskArgs;

/// The handle with the run's budget and recorder attached.
pub(super) fn attach(
    config: &Config,
    mut llm: Llm,
    args: &AskArgs,
) -> Result<(Llm, Option<Arc<Recorder>>), String> {
    let err = |e: switchyard::Error| format!("error: {e}");
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
    let mut info = RunInfo::new().settings(&config.sections);
    match &args.replay {
        Some(replayed) => {
            // The replayed run's description of its calls, whatever the current config says.
            info = info.replay_of(replayed);
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
        }
        None => {
            info = info.role(
                role,
                llm.label(),
                llm.backend().name(),
                llm.model(),
                &config.registry,
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
