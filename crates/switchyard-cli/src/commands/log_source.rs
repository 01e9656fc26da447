//! Where `log stats|show|export` read calls: a run directory (or a gateway's data
//! directory), or a PostgreSQL store shared by gateway replicas (`--store`).

use std::path::PathBuf;
use switchyard::record::{self, CallRecord};
use switchyard_gateway::pg::PgStoreConfig;

/// A place calls are read from.
pub(crate) enum Source {
    /// A run directory.
    Dir(PathBuf),
    /// A PostgreSQL store: its URL.
    Postgres(String),
}

/// The source `--store` (or a run directory) names, or what to give instead.
pub(crate) fn source(run_dir: Option<&PathBuf>, store: Option<&str>) -> Result<Source, String> {
    match (run_dir, store) {
        (Some(dir), None) => Ok(Source::Dir(dir.clone())),
        (None, Some(store)) => postgres(store).map(Source::Postgres),
        (Some(_), Some(_)) => Err("error: give a run directory or --store, not both".into()),
        (None, None) => Err(
            "error: give a run directory (or a gateway's data directory), or --store postgres to read the PostgreSQL store named by $SWITCHYARD_PG_URL".into(),
        ),
    }
}

/// The URL `--store` stands for.
fn postgres(store: &str) -> Result<String, String> {
    match super::postgres::command_line_url(store)? {
        Some(url) => Ok(url),
        None => PgStoreConfig::default()
            .url(|name| std::env::var(name).ok())
            .map_err(|e| format!("error: --store postgres: {e}")),
    }
}

/// Every call of the source, oldest first (none is an error saying where it looked), with
/// the fields every record line holds: a run directory's records of format 3 have their
/// canonical forms (request, reply, prompt digest) left underived, as `log stats` needs
/// none of them.
pub(crate) fn records(source: &Source) -> Result<Vec<CallRecord>, String> {
    Ok(records_read(source, false)?
        .into_iter()
        .map(|(_, r)| r)
        .collect())
}

/// [`records`], each with its call id when the source is a PostgreSQL store (where
/// numbers are per replica). A line of a run directory's log that does not read is set
/// aside, named in a warning on stderr, and the other calls are read.
pub(crate) fn records_with_ids(
    source: &Source,
) -> Result<Vec<(Option<String>, CallRecord)>, String> {
    records_read(source, true)
}

/// [`records_with_ids`], the canonical forms of a run directory's records derived or not.
fn records_read(
    source: &Source,
    derive: bool,
) -> Result<Vec<(Option<String>, CallRecord)>, String> {
    let (records, place) = match source {
        Source::Dir(dir) => (
            read_dir(dir, derive)?
                .into_iter()
                .map(|r| (None, r))
                .collect::<Vec<_>>(),
            format!(
                "{} (expected {}/{})",
                dir.display(),
                record::LOG_DIR,
                record::segment_name(1)
            ),
        ),
        Source::Postgres(url) => (
            super::postgres::records(url)?
                .into_iter()
                .map(|(id, r)| (Some(id), r))
                .collect(),
            format!(
                "the PostgreSQL store {}",
                switchyard_gateway::pg::redact_url(url)
            ),
        ),
    };
    if records.is_empty() {
        return Err(format!("error: {place} holds no recorded calls"));
    }
    Ok(records)
}

/// The records of a run directory; the lines set aside are said on stderr, with the
/// count.
fn read_dir(dir: &std::path::Path, derive: bool) -> Result<Vec<CallRecord>, String> {
    let read = match derive {
        true => record::read_log(dir),
        false => record::read_log_fields(dir),
    }
    .map_err(|e| format!("error: {e}"))?;
    for aside in &read.set_aside {
        eprintln!("warning: {aside}; set aside, the other calls are read");
    }
    if !read.set_aside.is_empty() {
        eprintln!(
            "warning: {} line{} of {} set aside as unreadable, {} call{} read",
            read.set_aside.len(),
            if read.set_aside.len() == 1 { "" } else { "s" },
            record::log_dir(dir).display(),
            read.records.len(),
            if read.records.len() == 1 { "" } else { "s" },
        );
    }
    Ok(read.records)
}
