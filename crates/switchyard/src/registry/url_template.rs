//! URLs with `{VARIABLE}` placeholders filled from the environment at call time
//! (Vertex AI's project and location). A placeholder may carry a default for an unset
//! variable, written as a shell does: `{GOOGLE_CLOUD_LOCATION:-global}`.

use crate::env::EnvSource;

/// The placeholders `{NAME}` in `template`, in order.
pub(super) fn placeholders(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) => {
                out.push(after[..end].to_string());
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// A placeholder's variable and its default (`NAME:-default`), if it has one.
fn split_default(placeholder: &str) -> (&str, Option<&str>) {
    match placeholder.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (placeholder, None),
    }
}

/// Checks a URL (placeholders allowed) and returns it without a trailing `/`.
pub(super) fn validate(s: &str) -> Result<String, String> {
    let trimmed = s.trim().trim_end_matches('/');
    let mut probe = trimmed.to_string();
    for placeholder in placeholders(trimmed) {
        let (name, default) = split_default(&placeholder);
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(format!(
                "`{{{placeholder}}}` is not a placeholder (use `{{VARIABLE_NAME}}` in upper case, \
                 or `{{VARIABLE_NAME:-default}}`)"
            ));
        }
        if let Some(d) = default {
            if d.is_empty()
                || !d
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                return Err(format!(
                    "the default of `{{{placeholder}}}` must be letters, digits, `-`, `_` and `.`"
                ));
            }
        }
        probe = probe.replace(&format!("{{{placeholder}}}"), "x");
    }
    if probe.contains(['{', '}']) {
        return Err("unbalanced `{` or `}`".into());
    }
    let url = url::Url::parse(&probe).map_err(|e| e.to_string())?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(format!(
            "scheme `{}` is not accepted (use http or https)",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("it has no host".into());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("a root URL takes no `?query` or `#fragment`".into());
    }
    Ok(trimmed.to_string())
}

/// Fills the placeholders of `template` from `env` (an unset variable takes the
/// placeholder's default); `Err(name)` names the first unset one without a default.
pub(super) fn expand(template: &str, env: &dyn EnvSource) -> Result<String, String> {
    let mut out = template.to_string();
    for placeholder in placeholders(template) {
        let (name, default) = split_default(&placeholder);
        let value = env
            .var(name)
            .or_else(|| default.map(str::to_string))
            .ok_or_else(|| name.to_string())?;
        out = out.replace(&format!("{{{placeholder}}}"), &value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_and_trims() {
        assert_eq!(
            validate("http://a:8000/v1/").as_deref(),
            Ok("http://a:8000/v1")
        );
        assert!(validate("https://{LOC}-x.googleapis.com/v1/{P}").is_ok());
        assert!(validate("not a url").is_err());
        assert!(validate("ftp://a/v1").is_err());
        assert!(validate("https://{lower}/v1").is_err());
        assert!(validate("https://{LOC:-us-east5}-x.googleapis.com/v1").is_ok());
        assert!(validate("https://{LOC:-}-x.googleapis.com/v1").is_err());
        assert!(validate("https://{LOC:-a/b}-x.googleapis.com/v1").is_err());
    }

    #[test]
    fn an_unset_variable_takes_the_default() {
        let t = "https://{LOC:-global}.example/{P}/{LOC:-global}";
        let env = crate::env::MapEnv::new([("P", "p1")]);
        assert_eq!(expand(t, &env).unwrap(), "https://global.example/p1/global");
        let env = crate::env::MapEnv::new([("P", "p1"), ("LOC", "us-east5")]);
        assert_eq!(
            expand(t, &env).unwrap(),
            "https://us-east5.example/p1/us-east5"
        );
        assert_eq!(expand(t, &crate::env::MapEnv::default()).unwrap_err(), "P");
    }
}
