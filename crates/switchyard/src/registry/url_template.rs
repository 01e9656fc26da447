//! URLs with `{VARIABLE}` placeholders filled from the environment at call time
//! (Vertex AI's project and location).

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

/// Checks a URL (placeholders allowed) and returns it without a trailing `/`.
pub(super) fn validate(s: &str) -> Result<String, String> {
    let trimmed = s.trim().trim_end_matches('/');
    let mut probe = trimmed.to_string();
    for name in placeholders(trimmed) {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(format!(
                "`{{{name}}}` is not a placeholder (use `{{VARIABLE_NAME}}` in upper case)"
            ));
        }
        probe = probe.replace(&format!("{{{name}}}"), "x");
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

/// Fills the placeholders of `template` from `env`; `Err(name)` names the first unset one.
pub(super) fn expand(template: &str, env: &dyn EnvSource) -> Result<String, String> {
    let mut out = template.to_string();
    for name in placeholders(template) {
        let value = env.var(&name).ok_or_else(|| name.clone())?;
        out = out.replace(&format!("{{{name}}}"), &value);
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
    }
}
