//! `switchyard store migrate`: the gateway's PostgreSQL schema created or upgraded, alone
//! (the gateway also migrates on start once it uses the store; docs/scaling.md).

use crate::cli::StoreMigrateArgs;

/// Runs `store migrate`.
pub(super) fn migrate(args: &StoreMigrateArgs) -> Result<(), String> {
    let (shown, was, now) = super::postgres::migrate(&args.url_env)?;
    if was == now {
        println!("{shown}: schema at version {now}, nothing to do");
    } else {
        println!("{shown}: schema upgraded from version {was} to {now}");
    }
    Ok(())
}
