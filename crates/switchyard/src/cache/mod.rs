//! The response cache (`docs/routing.md`, *The cache*): an identical call is answered
//! from the call log instead of the provider, in the library (a run config's `cache:`)
//! and in the gateway alike. The config (`config`), the key (`key`), the entries
//! (`index`: read from the calls index `calls.sqlite`, which replay reads too, and fed
//! by the recorder's writer), and the lookup ([`Cache::lookup`]).

mod config;
mod index;
mod key;

pub use config::{parse_ttl, read_cache, CacheConfig, CacheMode, CacheScope};
pub(crate) use index::entry_key_with;
pub use index::{entry_key, CacheIndex, Entry, Found};
pub use key::{cache_key, cacheable, embed_cache_key};

use crate::record::CallRecord;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;
use switchyard_wire::{Dialect, Request};

/// A cache over one or more run directories: the first is the one calls are recorded
/// into (its new entries come from its recorder), the others are read at open.
#[derive(Debug)]
pub struct Cache {
    config: CacheConfig,
    scope: CacheScope,
    index: Arc<CacheIndex>,
    dirs: Vec<PathBuf>,
}

/// What the cache made of a call.
#[derive(Debug)]
pub enum Lookup {
    /// A recorded call answers it (boxed: a record is large, a miss is not).
    Hit(Box<Hit>),
    /// None does; the key to enter the call under when it succeeds (`None`: the call is
    /// not to be entered).
    Miss(Option<String>),
}

/// The recorded call that answers.
#[derive(Debug)]
pub struct Hit {
    /// Its record, read from its line.
    pub record: CallRecord,
    /// Whether its raw bytes are in the asker's form (the client's dialect, passed
    /// through, the same stream flag): then they answer byte for byte.
    pub exact: bool,
    /// The run directory it lies in, when not the one recorded into.
    pub other_run: Option<PathBuf>,
}

impl Cache {
    /// The cache of calls recorded into `run_dir` under `config`: with `scope: store`
    /// (`default_scope` when the config names none), also every run directory beside
    /// it (the other folders of its parent holding a call log). Empty until
    /// [`Cache::load`]: give its [`index`](Cache::index) to the run directory's recorder
    /// first, so that no record falls between the two.
    pub fn new(config: CacheConfig, run_dir: &Path, default_scope: CacheScope) -> Arc<Cache> {
        let mut dirs = vec![run_dir.to_path_buf()];
        if config.reads() && config.scope.unwrap_or(default_scope) == CacheScope::Store {
            dirs.extend(sibling_runs(run_dir));
        }
        Arc::new(Cache {
            config,
            scope: config.scope.unwrap_or(default_scope),
            index: Arc::new(CacheIndex::default()),
            dirs,
        })
    }

    /// Reads the entries already on disk: the recorded directory's (unless the scope is
    /// `run` and `fresh`: a gateway's run is the calls since it started), and with
    /// `scope: store` those of the directories beside it.
    pub fn load(&self, fresh: bool) {
        if !self.config.reads() {
            return;
        }
        if !(fresh && self.scope == CacheScope::Run) {
            self.index.load(&self.dirs[0], 0);
        }
        for (i, dir) in self.dirs.iter().enumerate().skip(1) {
            self.index.load(dir, i as u32);
        }
    }

    /// The config it runs under.
    pub fn config(&self) -> CacheConfig {
        self.config
    }

    /// The scope it answers from (the config's, else the default it was opened with).
    pub fn scope(&self) -> CacheScope {
        self.scope
    }

    /// Its entries (the recorder of the first run directory adds to them).
    pub fn index(&self) -> &Arc<CacheIndex> {
        &self.index
    }

    /// The run directories it answers from, the recorded one first.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Looks up a call of `name` (a route's name, else `<backend>/<model id>`) asking
    /// `request`, from a client speaking `dialect` (`None`: the library's caller, who
    /// takes any recorded form) that streams or not.
    pub fn lookup(
        &self,
        name: &str,
        request: &Request,
        dialect: Option<Dialect>,
        stream: bool,
    ) -> Lookup {
        if !self.config.reads() || !cacheable(request, self.config.temperature_above_zero) {
            return Lookup::Miss(None);
        }
        self.lookup_key(cache_key(name, request), dialect, stream)
    }

    /// Looks up an embeddings call of `name` asking `request` (never a chat call's
    /// entry: their keys differ).
    pub fn lookup_embedding(
        &self,
        name: &str,
        request: &switchyard_wire::embed::EmbedRequest,
    ) -> Lookup {
        if !self.config.reads() {
            return Lookup::Miss(None);
        }
        self.lookup_key(embed_cache_key(name, request), None, false)
    }

    /// Looks up `key` for an asker in `dialect` that streams or not.
    fn lookup_key(&self, key: String, dialect: Option<Dialect>, stream: bool) -> Lookup {
        let hit = self
            .index
            .find(&key, dialect, stream, self.config.ttl, SystemTime::now())
            .and_then(|found| self.read(&key, found));
        match hit {
            Some(hit) => Lookup::Hit(Box::new(hit)),
            None => Lookup::Miss(self.config.writes().then_some(key)),
        }
    }

    /// The record of the entry found, read from its one line; `None` when the line no
    /// longer reads as that call's success.
    fn read(&self, key: &str, found: Found) -> Option<Hit> {
        let dir = self.dirs.get(found.source as usize)?;
        let at = match found.location {
            Some(at) => at,
            None => {
                let at = crate::record::record_location(dir, found.number).ok()?;
                self.index.locate(key, found.number, at);
                at
            }
        };
        let record = crate::record::read_record_at(dir, at).ok()?;
        (record.number == found.number && entry_key(&record) == Some(key)).then(|| Hit {
            record,
            exact: found.exact,
            other_run: (found.source > 0).then(|| dir.clone()),
        })
    }
}

/// The other run directories beside `run_dir`: the folders of its parent that hold a
/// call log, in name order.
fn sibling_runs(run_dir: &Path) -> Vec<PathBuf> {
    let parent = match run_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let own = std::fs::canonicalize(run_dir).ok();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&parent)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| crate::record::log_dir(p).is_dir())
        .filter(|p| std::fs::canonicalize(p).ok() != own)
        .collect();
    dirs.sort();
    dirs
}
