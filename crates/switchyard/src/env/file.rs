//! Env files (`.env.switchyard`): `KEY=VALUE` lines read into an [`EnvSource`] laid over
//! the process environment, and one variable written or replaced in place.
//!
//! The grammar is the common dotenv subset: blank lines and `#` comments are kept, an
//! optional `export ` prefix, values unquoted (a ` #` starts a comment), in single quotes
//! (taken literally) or in double quotes (`\n`, `\t`, `\"`, `\\` escapes).
//!
//! Loading never touches the process environment: a program passes the [`LayeredEnv`] to
//! whatever resolves backends and keys. A subprocess that must see the variables (a CLI
//! agent) is given them explicitly from [`EnvFile::vars`].

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use crate::env::EnvSource;

/// A problem reading or writing an env file; it never holds a value from the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvFileError {
    /// The file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A line that is not `KEY=VALUE`, a comment or blank.
    #[error("{path}:{line}: {reason}; expected `NAME=value` (optionally `export NAME=value`, the value unquoted, in '…' or in \"…\"), a `#` comment or a blank line")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// What was wrong.
        reason: String,
    },
    /// A variable name that is not letters, digits and `_`.
    #[error("`{name}` is not a valid environment variable name (letters, digits and `_`, not starting with a digit)")]
    BadName {
        /// The name.
        name: String,
    },
}

/// The variables of an env file, in file order (a later line wins over an earlier one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvFile {
    vars: Vec<(String, String)>,
}

/// True for a valid environment variable name.
pub fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The name a line assigns, if it is an assignment (`NAME=` or `export NAME=`).
fn assigned_name(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let t = t.strip_prefix("export ").map(str::trim_start).unwrap_or(t);
    let (name, _) = t.split_once('=')?;
    let name = name.trim_end();
    is_var_name(name).then_some(name)
}

fn parse_value(raw: &str) -> Result<String, String> {
    let raw = raw.trim_start();
    let Some(first) = raw.chars().next() else {
        return Ok(String::new());
    };
    match first {
        '\'' => {
            let rest = &raw[1..];
            let end = rest.find('\'').ok_or("a single quote is not closed")?;
            check_tail(&rest[end + 1..])?;
            Ok(rest[..end].to_string())
        }
        '"' => {
            let mut out = String::new();
            let mut chars = raw[1..].char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        check_tail(&raw[1 + i + 1..])?;
                        return Ok(out);
                    }
                    '\\' => match chars.next() {
                        Some((_, 'n')) => out.push('\n'),
                        Some((_, 't')) => out.push('\t'),
                        Some((_, 'r')) => out.push('\r'),
                        Some((_, other)) => out.push(other),
                        None => return Err("a double quote is not closed".into()),
                    },
                    other => out.push(other),
                }
            }
            Err("a double quote is not closed".into())
        }
        _ => {
            // An unquoted value ends at ` #` (a comment) and loses trailing blanks.
            let mut end = raw.len();
            let mut prev_space = false;
            for (i, c) in raw.char_indices() {
                if c == '#' && prev_space {
                    end = i;
                    break;
                }
                prev_space = c.is_whitespace();
            }
            Ok(raw[..end].trim_end().to_string())
        }
    }
}

/// After a closing quote only blanks and a comment may follow.
fn check_tail(tail: &str) -> Result<(), String> {
    let t = tail.trim_start();
    if t.is_empty() || t.starts_with('#') {
        Ok(())
    } else {
        Err("text after the closing quote".into())
    }
}

impl EnvFile {
    /// Parses the text of an env file; `label` names it in errors.
    pub fn parse(text: &str, label: &str) -> Result<EnvFile, EnvFileError> {
        let mut vars: Vec<(String, String)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let syntax = |reason: &str| EnvFileError::Syntax {
                path: label.to_string(),
                line: n + 1,
                reason: reason.to_string(),
            };
            let Some(name) = assigned_name(line) else {
                return Err(syntax(if line.contains('=') {
                    "the name before `=` is not a valid variable name"
                } else {
                    "there is no `=`"
                }));
            };
            let raw = line.split_once('=').map(|(_, v)| v).unwrap_or("");
            let value = parse_value(raw).map_err(|r| syntax(&r))?;
            vars.retain(|(k, _)| k != name);
            vars.push((name.to_string(), value));
        }
        Ok(EnvFile { vars })
    }

    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<EnvFile, EnvFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| EnvFileError::Io {
            path: path.display().to_string(),
            message: format!("cannot read the env file: {e}"),
        })?;
        EnvFile::parse(&text, &path.display().to_string())
    }

    /// The variables, in file order.
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// The value of `name`, if the file sets it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// An env file laid over another environment: the file's variables win (an explicit
/// `--env-file` beats what the shell happens to hold), everything else comes from `base`.
pub struct LayeredEnv<B: EnvSource> {
    file: HashMap<String, String>,
    base: B,
}

impl<B: EnvSource> LayeredEnv<B> {
    /// `file` over `base`.
    pub fn new(file: &EnvFile, base: B) -> Self {
        LayeredEnv {
            file: file.vars.iter().cloned().collect(),
            base,
        }
    }
}

impl<B: EnvSource> EnvSource for LayeredEnv<B> {
    fn var(&self, name: &str) -> Option<String> {
        match self.file.get(name) {
            Some(v) if !v.is_empty() => Some(v.clone()),
            _ => self.base.var(name),
        }
    }

    fn explicit_vars(&self) -> Vec<(String, String)> {
        let mut vars = self.base.explicit_vars();
        let mut file: Vec<(String, String)> = self
            .file
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        file.sort();
        vars.extend(file);
        vars
    }
}

/// `value` as it is written after `=`: bare when it is made of plain characters, else in
/// double quotes with `\` and `"` escaped.
fn quoted(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/+@%,=".contains(c));
    if plain {
        return value.to_string();
    }
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
    out.push('"');
    out
}

/// What [`set_var`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOutcome {
    /// The file did not exist and was created.
    Created,
    /// The variable was already in the file; its line was replaced.
    Replaced,
    /// The variable was added at the end.
    Added,
}

/// Writes `name=value` into the env file at `path`: the variable's line is replaced if it
/// is there (every other line is kept as it was), else appended. The file is created with
/// mode 0600, and an existing file is left at 0600 too since it now holds a key. The new
/// content is written to a temporary file beside it and renamed over it, so a crash never
/// leaves half a file.
pub fn set_var(path: &Path, name: &str, value: &str) -> Result<SetOutcome, EnvFileError> {
    if !is_var_name(name) {
        return Err(EnvFileError::BadName {
            name: name.to_string(),
        });
    }
    let io = |what: &str, e: std::io::Error| EnvFileError::Io {
        path: path.display().to_string(),
        message: format!("{what}: {e}"),
    };
    let existing = match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io("cannot read the env file", e)),
    };
    let line = format!("{name}={}", quoted(value));
    let mut replaced = false;
    let mut lines: Vec<String> = Vec::new();
    for l in existing.as_deref().unwrap_or("").lines() {
        if assigned_name(l) == Some(name) {
            if !replaced {
                lines.push(line.clone());
                replaced = true;
            }
            // A second assignment of the same name would win on load: drop it.
        } else {
            lines.push(l.to_string());
        }
    }
    if !replaced {
        lines.push(line);
    }
    let mut text = lines.join("\n");
    text.push('\n');

    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "env".into());
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let write = || -> std::io::Result<()> {
        let mut f = options.open(&tmp)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // The mode given to open is masked by the umask; set it exactly.
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        return Err(io("cannot write the env file", e));
    }
    Ok(match (existing.is_some(), replaced) {
        (false, _) => SetOutcome::Created,
        (true, true) => SetOutcome::Replaced,
        (true, false) => SetOutcome::Added,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MapEnv;

    #[test]
    fn parses_the_dotenv_subset() {
        let text = "# a comment\n\nA=plain value # note\nexport B='single # kept'\nC=\"dq \\\"x\\\" \\n end\"\nD=\nA=again\n";
        let f = EnvFile::parse(text, "f").unwrap();
        assert_eq!(f.get("A"), Some("again"));
        assert_eq!(f.get("B"), Some("single # kept"));
        assert_eq!(f.get("C"), Some("dq \"x\" \n end"));
        assert_eq!(f.get("D"), Some(""));
        assert_eq!(f.vars().len(), 4);
    }

    #[test]
    fn refuses_malformed_lines_with_their_line() {
        let e = EnvFile::parse("A=1\nnot an assignment\n", "f.env").unwrap_err();
        assert_eq!(
            e.to_string().split(';').next().unwrap(),
            "f.env:2: there is no `=`"
        );
        let e = EnvFile::parse("1A=x\n", "f.env").unwrap_err().to_string();
        assert!(e.contains("f.env:1: the name before `=`"), "{e}");
        let e = EnvFile::parse("A='open\n", "f.env")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not closed"), "{e}");
    }

    #[test]
    fn the_file_wins_over_the_base() {
        let f = EnvFile::parse("A=file\nEMPTY=\n", "f").unwrap();
        let env = LayeredEnv::new(&f, MapEnv::new([("A", "base"), ("B", "b"), ("EMPTY", "e")]));
        assert_eq!(env.var("A").as_deref(), Some("file"));
        assert_eq!(env.var("B").as_deref(), Some("b"));
        // An empty value in the file counts as unset, like everywhere else.
        assert_eq!(env.var("EMPTY").as_deref(), Some("e"));
    }

    #[test]
    fn quoting_round_trips() {
        for v in ["sk-abc_DEF.123", "with space", "q\"uote\\", "a#b", ""] {
            let f = EnvFile::parse(&format!("X={}\n", quoted(v)), "f").unwrap();
            assert_eq!(f.get("X"), Some(v), "{v}");
        }
    }
}
