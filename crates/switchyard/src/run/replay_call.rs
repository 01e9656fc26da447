//! A one-call run that answers from a recorded run (`switchyard ask --replay`,
//! [`RunBuilder::replay`](super::RunBuilder::replay)): its handle and what `run.yaml` says
//! of it.

use super::assemble::OneCall;

/// The handle of a one-call run that answers from the recorded run in `run_dir` (`ask
/// --replay`): the recorded calls of the role (or of none), with that run's reference,
/// model and prices whatever the current config says, and the run's `retry:`/`timeouts:`.
pub(crate) fn replaying(
    config: &crate::registry::Config,
    run_dir: &std::path::Path,
    one: &OneCall,
) -> crate::Result<crate::Llm> {
    let policy = super::call_policy(config)?;
    let llm = crate::Llm::replaying(run_dir, one.role.as_deref())?.with_policy(policy);
    Ok(match &one.role {
        Some(role) => llm.with_role(role.clone()),
        None => llm,
    })
}

/// The description `run.yaml` keeps of a replaying one-call run: the replayed run's own
/// description of the role's calls.
pub(crate) fn replay_info(
    info: crate::record::RunInfo,
    run_dir: &std::path::Path,
    one: &OneCall,
) -> crate::record::RunInfo {
    let mut info = info.replay_of(run_dir);
    let role = one.name();
    if let Ok(log) = crate::ReplayLog::open(run_dir) {
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
    info
}
