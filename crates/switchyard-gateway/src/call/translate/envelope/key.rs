//! The gateway's state key: what envelopes are signed with. From `SWITCHYARD_STATE_KEY`
//! when set (replicas behind one load balancer share it), else from `state.key` in the
//! data directory (made on first start, readable by its owner only), else drawn for this
//! process alone (envelopes then do not outlive a restart: their state is dropped, and the
//! next turn goes up without it).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::Path;

/// The environment variable that gives the key.
pub const STATE_KEY_ENV: &str = "SWITCHYARD_STATE_KEY";
/// The file in the data directory that holds it otherwise.
pub const STATE_KEY_FILE: &str = "state.key";
/// The shortest key accepted, in bytes.
const MIN_KEY_BYTES: usize = 32;

/// A secret for signing envelopes. Its bytes are never printed.
#[derive(Clone)]
pub struct StateKey(Vec<u8>);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(<secret>)")
    }
}

impl StateKey {
    /// A key of these bytes.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        StateKey(bytes)
    }

    /// A fresh random key.
    pub fn random() -> Result<Self, String> {
        let mut bytes = vec![0u8; MIN_KEY_BYTES];
        getrandom::fill(&mut bytes)
            .map_err(|e| format!("no random bytes for the state key from the OS: {e}"))?;
        Ok(StateKey(bytes))
    }

    /// The key as configured: the environment variable, else the data directory's file
    /// (created when missing), else a random key for this process.
    /// `from_env` is the value of [`STATE_KEY_ENV`], if set.
    pub fn load(from_env: Option<String>, data_dir: Option<&Path>) -> Result<Self, String> {
        let key = Self::read(from_env, data_dir)?;
        if let Ok(text) = std::str::from_utf8(&key.0) {
            switchyard::internal::redact::register(text, "the state key");
        }
        Ok(key)
    }

    fn read(from_env: Option<String>, data_dir: Option<&Path>) -> Result<Self, String> {
        if let Some(value) = from_env {
            if value.len() < MIN_KEY_BYTES {
                return Err(format!(
                    "{STATE_KEY_ENV} is {} bytes long; a state key must be at least {MIN_KEY_BYTES} (for example the output of `openssl rand -hex 32`)",
                    value.len()
                ));
            }
            return Ok(StateKey(value.as_bytes().to_vec()));
        }
        match data_dir {
            Some(dir) => Self::from_file(&dir.join(STATE_KEY_FILE)),
            None => Self::random(),
        }
    }

    fn from_file(path: &Path) -> Result<Self, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let text = text.trim();
                if text.len() < MIN_KEY_BYTES {
                    return Err(format!(
                        "{} holds {} bytes; a state key must be at least {MIN_KEY_BYTES} (delete the file to have a new one made, which drops the state in clients' envelopes)",
                        path.display(),
                        text.len()
                    ));
                }
                Ok(StateKey(text.as_bytes().to_vec()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::random()?;
                let hex: String = key.0.iter().map(|b| format!("{b:02x}")).collect();
                write_private(path, &hex)
                    .map_err(|e| format!("cannot write the state key {}: {e}", path.display()))?;
                Ok(StateKey(hex.into_bytes()))
            }
            Err(e) => Err(format!("cannot read the state key {}: {e}", path.display())),
        }
    }

    /// HMAC-SHA256 of `prefix` then `data`.
    pub(crate) fn mac(&self, prefix: &[u8], data: &[u8]) -> [u8; 32] {
        let mut mac = self.hmac();
        mac.update(prefix);
        mac.update(data);
        mac.finalize().into_bytes().into()
    }

    /// Whether `tag` is the leading bytes of the MAC of `prefix` then `data` (compared in
    /// constant time).
    pub(crate) fn verify(&self, prefix: &[u8], data: &[u8], tag: &[u8]) -> bool {
        let mut mac = self.hmac();
        mac.update(prefix);
        mac.update(data);
        mac.verify_truncated_left(tag).is_ok()
    }

    fn hmac(&self) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC accepts any key length")
    }
}

/// Writes `text` to a new file only its owner may read.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_key_is_registered_for_redaction() {
        let value = "state-key-for-redaction-0123456789abcdef".to_string();
        StateKey::load(Some(value.clone()), None).unwrap();
        let text = format!("envelope opened with {value}");
        assert_eq!(
            switchyard::internal::redact::redact(&text),
            "envelope opened with [redacted]"
        );
    }

    #[test]
    fn the_data_directory_keeps_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let first = StateKey::from_file(&dir.path().join(STATE_KEY_FILE)).unwrap();
        let again = StateKey::from_file(&dir.path().join(STATE_KEY_FILE)).unwrap();
        assert_eq!(first.0, again.0);
        assert_eq!(first.0.len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(STATE_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.path().join("short"), "abc").unwrap();
        let err = StateKey::from_file(&dir.path().join("short")).unwrap_err();
        assert!(err.contains("at least 32"), "{err}");
        assert_eq!(format!("{first:?}"), "StateKey(<secret>)");
    }

    #[test]
    fn the_environment_wins_and_short_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let given = "k".repeat(32);
        let key = StateKey::load(Some(given.clone()), Some(dir.path())).unwrap();
        assert_eq!(key.0, given.as_bytes());
        assert!(
            !dir.path().join(STATE_KEY_FILE).exists(),
            "no file when the environment gives the key"
        );
        let err = StateKey::load(Some("short".into()), None).unwrap_err();
        assert!(
            err.contains(STATE_KEY_ENV) && err.contains("at least 32"),
            "{err}"
        );
        assert!(!err.contains("short"), "the value is never printed: {err}");
        assert_eq!(StateKey::load(None, None).unwrap().0.len(), 32);
    }
}
