//! Reading a run's records back.

use super::run_dir::LOG_DIR;
use super::writer::file_name;
use super::CallRecord;
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The path of record `number` in a run directory.
pub fn record_path(run_dir: &Path, number: u64) -> PathBuf {
    run_dir.join(LOG_DIR).join(file_name(number))
}

/// The numbers of the records in a run directory, sorted (temporary files are not
/// records). An absent `llm_log/` holds none.
pub fn record_numbers(run_dir: &Path) -> Result<Vec<u64>> {
    let log = run_dir.join(LOG_DIR);
    let entries = match std::fs::read_dir(&log) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::Config(format!("cannot read {}: {e}", log.display()))),
    };
    let mut numbers: Vec<u64> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let name = name.to_str()?;
            name.strip_suffix(".json")?.parse().ok()
        })
        .collect();
    numbers.sort_unstable();
    Ok(numbers)
}

/// Reads record `number`.
pub fn read_record(run_dir: &Path, number: u64) -> Result<CallRecord> {
    let path = record_path(run_dir, number);
    let bytes = std::fs::read(&path).map_err(|e| {
        Error::Config(format!(
            "cannot read call {number} ({}): {e}",
            path.display()
        ))
    })?;
    let record: CallRecord = serde_json::from_slice(&bytes).map_err(|e| {
        Error::Config(format!(
            "{}: not a call record of format {}: {e}",
            path.display(),
            super::FORMAT
        ))
    })?;
    if record.format != super::FORMAT {
        return Err(Error::Config(format!(
            "{}: record format {} is not one this version reads (it reads {})",
            path.display(),
            record.format,
            super::FORMAT
        )));
    }
    Ok(record)
}

/// Reads every record of a run, in number order.
pub fn read_records(run_dir: &Path) -> Result<Vec<CallRecord>> {
    record_numbers(run_dir)?
        .into_iter()
        .map(|n| read_record(run_dir, n))
        .collect()
}
