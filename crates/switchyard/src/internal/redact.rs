//! One redaction of every key the process holds, for every text that leaves it.
//!
//! Code that reads a key registers it here ([`register`]): a backend's key (every
//! [`Secret`](crate::backend::auth::Secret) does so when made, Google's access tokens
//! included), the gateway's client keys read from `key_env`, the PostgreSQL URL's
//! password, the envelope's state key, the OTLP exporter's headers. The exits then pass
//! their text through [`redact`] / [`redact_bytes`] (or a [`StreamRedactor`] for a body
//! read chunk by chunk): every occurrence of a registered key becomes [`MARKER`], which
//! says neither which key nor how long it was.
//!
//! The exits are few on purpose (docs/reliability.md, "Redaction"): what comes from an
//! upstream is redacted where it enters (the send path's headers and body, whole or
//! streamed), so the errors, records, replies and spans built from it are clean; the
//! record writer, the gateway's own error messages, the log writer, the spans and
//! `/metrics` pass through it again as they leave.
//!
//! Keys shorter than [`MIN_KEY_LEN`] bytes are not registered (a one-letter key would
//! redact every such letter): a warning at registration says so.

use aho_corasick::packed;
use aho_corasick::{AhoCorasick, MatchKind};
use bytes::Bytes;
use std::borrow::Cow;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

/// What a key is replaced by.
pub const MARKER: &str = "[redacted]";

/// The shortest key redacted: shorter ones would match ordinary text.
pub const MIN_KEY_LEN: usize = 8;

/// Short-lived tokens (Google's access tokens, renewed hourly) kept for redaction: the
/// newest this many, so a process running for months does not grow its set without end.
const ROTATING_KEPT: usize = 32;

/// The keys known now: an immutable set, replaced whole when a key is added, so a reader
/// takes it with one lock and an `Arc` clone and keeps it for a whole body.
pub struct KeySet {
    /// The keys, in registration order.
    keys: Vec<Box<[u8]>>,
    /// The searchers over `keys`, [`GROUP`] keys each (leftmost-longest: a key inside a
    /// longer one is not found in place of the longer one); none when there is no key.
    finders: Vec<Finder>,
    /// The longest key's length.
    longest: usize,
    /// The keys sorted, for finding those a text begins.
    sorted: Vec<Box<[u8]>>,
    /// Whether a byte occurs in some key: a body's end that could begin a key is the run
    /// of such bytes at its end (none for a JSON body or an SSE event, which end with `}`
    /// or a blank line).
    in_key: [bool; 256],
    /// Whether a byte begins some key.
    starts_key: [bool; 256],
    /// Whether no key holds a byte a JSON string escapes (a quote, a backslash, a control
    /// byte): then a key inside a string shows as itself in the JSON text
    /// ([`redact_json`]).
    plain: bool,
    /// Which set this is: 0 before any key, one more for each set built after ([`Redacted`]).
    generation: u64,
}

impl Default for KeySet {
    fn default() -> Self {
        KeySet::build(Vec::new())
    }
}

impl KeySet {
    fn build(keys: Vec<Box<[u8]>>) -> KeySet {
        let finders = keys.chunks(GROUP).filter_map(Finder::new).collect();
        let longest = keys.iter().map(|k| k.len()).max().unwrap_or(0);
        let mut sorted = keys.clone();
        sorted.sort();
        let mut in_key = [false; 256];
        let mut starts_key = [false; 256];
        for key in &keys {
            key.iter().for_each(|&b| in_key[usize::from(b)] = true);
            if let Some(&b) = key.first() {
                starts_key[usize::from(b)] = true;
            }
        }
        let plain = keys
            .iter()
            .all(|k| k.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\'));
        KeySet {
            keys,
            finders,
            longest,
            sorted,
            in_key,
            starts_key,
            plain,
            generation: 0,
        }
    }

    /// `text` with every key replaced, a key cut off at its very end included (at least
    /// [`MIN_KEY_LEN`] bytes of its beginning); `None` when it holds none.
    fn clean(&self, text: &[u8]) -> Option<Vec<u8>> {
        if !self.finds(text) && self.held(text) < MIN_KEY_LEN {
            return None;
        }
        let mut out = Vec::with_capacity(text.len());
        self.redact_into(text, &mut out, true);
        Some(out)
    }

    /// True when there is no key to look for.
    pub fn is_empty(&self) -> bool {
        self.finders.is_empty()
    }

    /// Appends `input` to `out` with every key replaced, except a last part that may be
    /// the beginning of a key whose rest is still to come: its length is returned (the
    /// caller keeps those bytes for the next chunk). `at_end`: nothing more comes, so
    /// nothing is held; a held beginning of at least [`MIN_KEY_LEN`] bytes is replaced,
    /// a shorter one written as it is.
    fn redact_into(&self, input: &[u8], out: &mut Vec<u8>, at_end: bool) -> usize {
        let mut written = 0;
        let mut last_start = None;
        while let Some((start, end)) = self.find(input, written) {
            out.extend_from_slice(&input[written..start]);
            out.extend_from_slice(MARKER.as_bytes());
            written = end;
            last_start = Some((start, out.len() - MARKER.len()));
        }
        // A key that is the beginning of a longer key: when the input ends inside the
        // longer one, the whole of it is held, not the shorter match.
        if let Some((start, at)) = last_start {
            if self.begins_a_longer_key(&input[start..]) {
                out.truncate(at);
                return self.tail(&input[start..], out, at_end);
            }
        }
        let rest = &input[written..];
        let held = self.held(rest);
        out.extend_from_slice(&rest[..rest.len() - held]);
        self.tail(&rest[rest.len() - held..], out, at_end)
    }

    /// Writes or holds `tail`, the beginning of a key.
    fn tail(&self, tail: &[u8], out: &mut Vec<u8>, at_end: bool) -> usize {
        if !at_end {
            return tail.len();
        }
        if tail.len() >= MIN_KEY_LEN {
            out.extend_from_slice(MARKER.as_bytes());
        } else {
            out.extend_from_slice(tail);
        }
        0
    }

    /// True when `text` is a key's strict beginning.
    fn begins_a_longer_key(&self, text: &[u8]) -> bool {
        self.keys
            .iter()
            .any(|k| k.len() > text.len() && k.starts_with(text))
    }

    /// The length of the longest end of `input` that is a strict beginning of a key.
    /// Only the last run of bytes that occur in keys is looked at, and in it only the
    /// places where a key could begin, each by a binary search of the sorted keys: a
    /// few comparisons, whatever the number of keys.
    fn held(&self, input: &[u8]) -> usize {
        let limit = input.len().saturating_sub(self.longest.saturating_sub(1));
        let mut start = input.len();
        while start > limit && self.in_key[usize::from(input[start - 1])] {
            start -= 1;
        }
        for i in start..input.len() {
            if !self.starts_key[usize::from(input[i])] {
                continue;
            }
            let tail = &input[i..];
            let first = self.sorted.partition_point(|k| &k[..] < tail);
            let longer = self.sorted[first..]
                .iter()
                .take_while(|k| k.starts_with(tail))
                .any(|k| k.len() > tail.len());
            if longer {
                return tail.len();
            }
        }
        0
    }

    /// Whether `input` holds a key.
    fn finds(&self, input: &[u8]) -> bool {
        self.finders.iter().any(|f| f.find(input).is_some())
    }

    /// The first key in `input` from `from` (the longest of those starting there), as
    /// its start and end.
    fn find(&self, input: &[u8], from: usize) -> Option<(usize, usize)> {
        let rest = input.get(from..)?;
        self.finders
            .iter()
            .filter_map(|f| f.find(rest))
            .min_by_key(|&(start, end)| (start, std::cmp::Reverse(end)))
            .map(|(start, end)| (from + start, from + end))
    }
}

/// How many keys one searcher looks for: Teddy, the SIMD searcher of `aho-corasick`'s
/// `packed` module, takes up to 64; a process with more keys runs several.
const GROUP: usize = 32;

/// A searcher for a group of keys. Teddy first: the automaton's own prefilter looks for
/// the keys' first byte, and keys share theirs (`sk-…`), so on text it stops at every
/// `s` and runs at a few hundred MB/s, where Teddy runs at several GB/s
/// (docs/reliability.md, "Redaction").
enum Finder {
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

impl Finder {
    fn new(keys: &[Box<[u8]>]) -> Option<Finder> {
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostLongest)
            .builder()
            .extend(keys)
            .build();
        match packed {
            Some(s) => Some(Finder::Packed(s)),
            None => AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(keys)
                .ok()
                .map(Finder::Automaton),
        }
    }

    fn find(&self, input: &[u8]) -> Option<(usize, usize)> {
        let m = match self {
            Finder::Packed(s) => s.find(input),
            Finder::Automaton(a) => a.find(input),
        }?;
        Some((m.start(), m.end()))
    }
}

/// The registry: lasting keys, rotating tokens, and the set built from both.
struct Registry {
    lasting: Vec<Box<[u8]>>,
    rotating: VecDeque<Box<[u8]>>,
    known: HashSet<Box<[u8]>>,
    /// Keys too short to redact, each warned about once.
    short: HashSet<Box<[u8]>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);
static CURRENT: RwLock<Option<Arc<KeySet>>> = RwLock::new(None);
/// False until a key is registered: the common case of a process without keys (tests,
/// the mock) pays one atomic load per text.
static ANY: AtomicBool = AtomicBool::new(false);

/// Registers a key held for the process's life (a backend's key, a client key, a
/// password). `origin` names it for the warning a short key gets ("the key in
/// `OPENAI_API_KEY`"); the key itself is never printed.
pub fn register(key: &str, origin: &str) {
    add(key, origin, false);
}

/// Registers a short-lived token (an OAuth access token): only the newest few are kept.
pub fn register_token(key: &str, origin: &str) {
    add(key, origin, true);
}

fn add(key: &str, origin: &str, rotating: bool) {
    let key = key.trim();
    if key.is_empty() {
        return;
    }
    let mut warn = None;
    {
        let mut guard = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        let registry = guard.get_or_insert_with(|| Registry {
            lasting: Vec::new(),
            rotating: VecDeque::new(),
            known: HashSet::new(),
            short: HashSet::new(),
        });
        if key.len() < MIN_KEY_LEN {
            if registry.short.insert(key.as_bytes().into()) {
                warn = Some(origin.to_string());
            }
        } else {
            let bytes: Box<[u8]> = key.as_bytes().into();
            if registry.known.contains(&bytes) {
                return;
            }
            registry.known.insert(bytes.clone());
            if rotating {
                registry.rotating.push_back(bytes);
                if registry.rotating.len() > ROTATING_KEPT {
                    if let Some(old) = registry.rotating.pop_front() {
                        registry.known.remove(&old);
                    }
                }
            } else {
                registry.lasting.push(bytes);
            }
            let keys = registry
                .lasting
                .iter()
                .chain(registry.rotating.iter())
                .cloned()
                .collect();
            let mut set = KeySet::build(keys);
            // The one before it, replaced under the registry's lock.
            let mut current = CURRENT.write().unwrap_or_else(PoisonError::into_inner);
            set.generation = current.as_ref().map_or(0, |s| s.generation) + 1;
            *current = Some(Arc::new(set));
            drop(current);
            ANY.store(true, Ordering::Release);
        }
    }
    // Logged outside the locks: the log's writer redacts, and takes the set's lock.
    if let Some(origin) = warn {
        tracing::warn!(
            "{origin} is shorter than {MIN_KEY_LEN} bytes: a key that short cannot be told \
             from ordinary text, so it is not redacted from replies, records and logs; use \
             a longer key"
        );
    }
}

/// The keys registered so far (an empty set when none is).
pub fn keys() -> Arc<KeySet> {
    if !ANY.load(Ordering::Acquire) {
        return Arc::new(KeySet::default());
    }
    CURRENT
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_default()
}

/// `text` with every registered key replaced by [`MARKER`] (borrowed when it holds none).
pub fn redact(text: &str) -> Cow<'_, str> {
    match redact_bytes(text.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        // Only whole keys (valid UTF-8, like the text around them) were replaced, or a
        // held end of one: lossy conversion cannot change anything else.
        Cow::Owned(bytes) => Cow::Owned(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }),
    }
}

/// [`redact`] in place.
pub fn redact_string(text: &mut String) {
    if let Cow::Owned(clean) = redact(text) {
        *text = clean;
    }
}

/// `bytes` with every registered key replaced by [`MARKER`] (borrowed when they hold
/// none), a key cut off at the very end (at least [`MIN_KEY_LEN`] bytes of its
/// beginning) included.
pub fn redact_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    if !ANY.load(Ordering::Acquire) {
        return Cow::Borrowed(bytes);
    }
    keys().clean(bytes).map_or(Cow::Borrowed(bytes), Cow::Owned)
}

/// [`redact_bytes`] of a JSON text, and whether every string in it is known to hold no
/// key without searching it again: true when the text held none and no key has a byte
/// that JSON escapes (so a key in a string would have shown as itself in the text). The
/// recorder's writer redacts a record's line, then asks this of the index row's strings
/// the line holds.
pub fn redact_json(json: &[u8]) -> (Cow<'_, [u8]>, bool) {
    if !ANY.load(Ordering::Acquire) {
        return (Cow::Borrowed(json), true);
    }
    let keys = keys();
    match keys.clean(json) {
        None => (Cow::Borrowed(json), keys.plain),
        Some(out) => (Cow::Owned(out), false),
    }
}

/// [`redact_bytes`] over shared bytes: the same bytes back when they hold no key.
pub fn redact_shared(bytes: Bytes) -> Bytes {
    redact_shared_since(bytes, None)
}

/// Bytes already redacted under one set of keys: where they enter (an upstream's body,
/// [`redact_stream`]) they are searched once, and an exit handed them with this mark
/// ([`redact_shared_since`]) searches them again only when a key was added since. The
/// record writer's pass over a long stream's bytes cost about an instruction a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Redacted(u64);

/// [`redact_shared`] of bytes `redacted` under a set of keys, when known: the same bytes
/// back, unsearched, when that set is still the current one.
pub fn redact_shared_since(bytes: Bytes, redacted: Option<Redacted>) -> Bytes {
    if !ANY.load(Ordering::Acquire) {
        return bytes;
    }
    let keys = keys();
    if redacted == Some(Redacted(keys.generation)) {
        return bytes;
    }
    keys.clean(&bytes).map_or(bytes, Bytes::from)
}

/// Whether `bytes` hold a whole registered key.
pub fn holds_key(bytes: &[u8]) -> bool {
    ANY.load(Ordering::Acquire) && keys().finds(bytes)
}

/// A body redacted chunk by chunk: a key split between two chunks is still found, because
/// a chunk's end that could be a key's beginning is held back until the next chunk says
/// (in practice never for an SSE stream, whose chunks end with a blank line).
pub struct StreamRedactor {
    keys: Arc<KeySet>,
    held: Vec<u8>,
}

impl Default for StreamRedactor {
    fn default() -> Self {
        StreamRedactor::new()
    }
}

impl StreamRedactor {
    /// A redactor over the keys registered now.
    pub fn new() -> Self {
        StreamRedactor {
            keys: keys(),
            held: Vec::new(),
        }
    }

    /// The next chunk, redacted; possibly shorter (an end held back) or empty.
    pub fn push(&mut self, chunk: Bytes) -> Bytes {
        if self.keys.is_empty() {
            return chunk;
        }
        // The common case, a chunk with no key and no key's beginning at its end, goes
        // out as the same bytes.
        if self.held.is_empty() && !self.keys.finds(&chunk) && self.keys.held(&chunk) == 0 {
            return chunk;
        }
        let mut input = std::mem::take(&mut self.held);
        input.extend_from_slice(&chunk);
        let mut out = Vec::with_capacity(input.len());
        let held = self.keys.redact_into(&input, &mut out, false);
        self.held = input[input.len() - held..].to_vec();
        Bytes::from(out)
    }

    /// The set of keys this redactor searches for.
    pub fn redacted(&self) -> Redacted {
        Redacted(self.keys.generation)
    }

    /// What is still held, at the body's end (a key's cut-off beginning of at least
    /// [`MIN_KEY_LEN`] bytes replaced).
    pub fn finish(&mut self) -> Bytes {
        let held = std::mem::take(&mut self.held);
        let mut out = Vec::new();
        self.keys.redact_into(&held, &mut out, true);
        Bytes::from(out)
    }
}

/// `stream` with every chunk through a [`StreamRedactor`]; what is held goes out before an
/// error or at the end. With the set of keys its chunks are redacted under.
pub fn redact_stream<E: Send + 'static>(
    stream: futures::stream::BoxStream<'static, Result<Bytes, E>>,
) -> (
    futures::stream::BoxStream<'static, Result<Bytes, E>>,
    Redacted,
) {
    use futures::StreamExt;
    if !ANY.load(Ordering::Acquire) {
        // No key yet: the set of none, which a key added later replaces.
        return (stream, Redacted(0));
    }
    let redactor = StreamRedactor::new();
    let redacted = redactor.redacted();
    let state = (stream, redactor, false);
    let stream = futures::stream::unfold(state, |(mut inner, mut redactor, ended)| async move {
        if ended {
            return None;
        }
        loop {
            match inner.next().await {
                Some(Ok(chunk)) => {
                    let out = redactor.push(chunk);
                    if !out.is_empty() {
                        return Some((Ok(out), (inner, redactor, false)));
                    }
                }
                Some(Err(e)) => {
                    // What was held is dropped with the broken body: it is only the
                    // beginning of a key, never text to show.
                    return Some((Err(e), (inner, redactor, true)));
                }
                None => {
                    let rest = redactor.finish();
                    return (!rest.is_empty()).then(|| (Ok(rest), (inner, redactor, true)));
                }
            }
        }
    })
    .boxed();
    (stream, redacted)
}

/// Every header value of `headers` redacted (a value that held a key is replaced with
/// the value redacted, or dropped when that is not a valid header value).
pub fn redact_headers(headers: &mut http::HeaderMap) {
    if !ANY.load(Ordering::Acquire) {
        return;
    }
    let keys = keys();
    let dirty: Vec<http::HeaderName> = headers
        .iter()
        .filter(|(_, v)| keys.finds(v.as_bytes()))
        .map(|(k, _)| k.clone())
        .collect();
    for name in dirty {
        let values: Vec<http::HeaderValue> = headers
            .get_all(&name)
            .iter()
            .filter_map(|v| {
                let clean = redact_bytes(v.as_bytes());
                http::HeaderValue::from_bytes(&clean).ok()
            })
            .collect();
        headers.remove(&name);
        for v in values {
            headers.append(name.clone(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(keys: &[&str]) -> KeySet {
        KeySet::build(keys.iter().map(|k| k.as_bytes().into()).collect())
    }

    fn whole(keys: &KeySet, input: &str) -> String {
        let mut out = Vec::new();
        keys.redact_into(input.as_bytes(), &mut out, true);
        String::from_utf8(out).unwrap()
    }

    fn chunked(keys: Arc<KeySet>, input: &str, cuts: &[usize]) -> String {
        let mut r = StreamRedactor {
            keys,
            held: Vec::new(),
        };
        let mut out = Vec::new();
        let mut from = 0;
        for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
            let cut = cut.clamp(from, input.len());
            out.extend_from_slice(&r.push(Bytes::copy_from_slice(&input.as_bytes()[from..cut])));
            from = cut;
        }
        out.extend_from_slice(&r.finish());
        String::from_utf8(out).unwrap()
    }

    const KEY: &str = "sk-test-0123456789abcdef";

    #[test]
    fn every_occurrence_is_replaced_and_nothing_else() {
        let keys = set(&[KEY, "other-key-XYZ"]);
        assert_eq!(
            whole(&keys, &format!("Bearer {KEY}; {KEY}, other-key-XYZ!")),
            "Bearer [redacted]; [redacted], [redacted]!"
        );
        assert_eq!(whole(&keys, "nothing here, sk-"), "nothing here, sk-");
        assert_eq!(whole(&keys, ""), "");
    }

    #[test]
    fn many_keys_in_several_searchers_are_all_found() {
        let keys: Vec<String> = (0..200)
            .map(|i| format!("sk-many-{i:04}-abcdefgh"))
            .collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let set = Arc::new(set(&refs));
        assert!(set.finders.len() > 1);
        let text: String = keys.iter().rev().map(|k| format!("<{k}>")).collect();
        let expected = "<[redacted]>".repeat(200);
        assert_eq!(whole(&set, &text), expected);
        assert_eq!(chunked(set, &text, &[5, 17, 1000, 2001]), expected);
    }

    #[test]
    fn a_cut_off_key_at_the_end_is_replaced_when_long_enough() {
        let keys = set(&[KEY]);
        assert_eq!(
            whole(&keys, &format!("key {}", &KEY[..12])),
            "key [redacted]"
        );
        assert_eq!(whole(&keys, "ask"), "ask");
    }

    #[test]
    fn a_key_inside_a_longer_key_gives_way_to_it() {
        let keys = Arc::new(set(&["abcdefgh", "abcdefghijkl"]));
        assert_eq!(whole(&keys, "x abcdefghijkl y"), "x [redacted] y");
        assert_eq!(whole(&keys, "x abcdefgh y"), "x [redacted] y");
        assert_eq!(
            chunked(keys.clone(), "x abcdefghijkl y", &[12]),
            "x [redacted] y"
        );
        assert_eq!(chunked(keys, "x abcdefgh y", &[10]), "x [redacted] y");
    }

    #[test]
    fn a_key_split_at_every_place_is_found() {
        let keys = Arc::new(set(&[KEY]));
        let text = format!("data: {{\"error\":\"bad key {KEY}\"}}\n\nmore {KEY}");
        let expected = "data: {\"error\":\"bad key [redacted]\"}\n\nmore [redacted]";
        for a in 0..text.len() {
            for b in [a, a + 1, a + 7, a + 30] {
                assert_eq!(
                    chunked(keys.clone(), &text, &[a, b]),
                    expected,
                    "cut at {a}, {b}"
                );
            }
        }
        // One byte at a time.
        let cuts: Vec<usize> = (1..text.len()).collect();
        assert_eq!(chunked(keys, &text, &cuts), expected);
    }

    #[test]
    fn chunks_without_a_key_pass_unchanged() {
        let keys = Arc::new(set(&[KEY]));
        let mut r = StreamRedactor {
            keys,
            held: Vec::new(),
        };
        let chunk = Bytes::from_static(b"data: {\"text\":\"hello\"}\n\n");
        let out = r.push(chunk.clone());
        assert_eq!(out.as_ptr(), chunk.as_ptr(), "the same bytes, not a copy");
        // An end that could begin the key is held, then let go when it does not.
        assert_eq!(r.push(Bytes::from_static(b"ends with sk")), "ends with ");
        assert_eq!(r.push(Bytes::from_static(b"y\n")), "sky\n");
        assert_eq!(r.finish(), "");
    }

    #[test]
    fn short_keys_are_refused_and_the_registry_redacts() {
        // The process-wide registry (other tests of this binary may add keys too).
        register("short", "a test key");
        register("sk-registry-test-key-0123456789", "a test key");
        register("ya29.token-test-0123456789", "a test key");
        assert_eq!(redact("short"), "short");
        assert_eq!(
            redact("a sk-registry-test-key-0123456789 b ya29.token-test-0123456789"),
            "a [redacted] b [redacted]"
        );
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "www-authenticate",
            http::HeaderValue::from_static("Bearer sk-registry-test-key-0123456789"),
        );
        headers.insert("x-ok", http::HeaderValue::from_static("fine"));
        redact_headers(&mut headers);
        assert_eq!(headers["www-authenticate"], "Bearer [redacted]");
        assert_eq!(headers["x-ok"], "fine");
        assert!(holds_key(b"..sk-registry-test-key-0123456789.."));
    }

    /// Bytes marked redacted under the current keys come back unsearched; under keys
    /// since added to, or unmarked, they are searched.
    #[test]
    fn bytes_redacted_under_the_current_keys_are_not_searched_again() {
        let first = "sk-since-first-0123456789abcdef";
        let later = "sk-since-later-0123456789abcdef";
        register(first, "a test key");
        let text = Bytes::from(format!("a {first} b {later}"));
        // Other tests of this binary may add keys meanwhile: judged on a try in which
        // none was.
        let unsearched = (0..100).any(|_| {
            let stamp = StreamRedactor::new().redacted();
            let out = redact_shared_since(text.clone(), Some(stamp));
            StreamRedactor::new().redacted() == stamp && out.as_ptr() == text.as_ptr()
        });
        assert!(unsearched, "the current keys' bytes were searched again");
        let stale = StreamRedactor::new().redacted();
        register(later, "a test key");
        assert_ne!(StreamRedactor::new().redacted(), stale);
        for mark in [Some(stale), None] {
            assert_eq!(
                redact_shared_since(text.clone(), mark),
                "a [redacted] b [redacted]"
            );
        }
    }

    #[test]
    fn old_tokens_are_let_go() {
        for i in 0..(ROTATING_KEPT + 5) {
            register_token(&format!("ya29.rotating-{i:04}-abcdefgh"), "a test token");
        }
        assert_eq!(
            redact("ya29.rotating-0000-abcdefgh"),
            "ya29.rotating-0000-abcdefgh"
        );
        let newest = format!("ya29.rotating-{:04}-abcdefgh", ROTATING_KEPT + 4);
        assert_eq!(redact(&newest), MARKER);
    }
}
