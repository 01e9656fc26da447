//! How a request proves who sends it: a bearer key, a key header, Google Application
//! Default Credentials, or nothing. Keys are held in [`Secret`], whose `Debug` and
//! `Display` never show the value.

use crate::error::Error;
use crate::error::Result;
use async_trait::async_trait;
use reqwest::header::{HeaderName, HeaderValue, AUTHORIZATION};
use std::fmt;
#[cfg(feature = "google-auth")]
use std::path::Path;
use std::sync::Arc;
#[cfg(feature = "google-auth")]
use tokio::sync::OnceCell;

/// A key read from the environment. Printing it prints `***`, and making one registers
/// it with the process's redaction of keys: no text the process writes shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key (and registers it for redaction).
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        crate::internal::redact::register(&value, "a backend's key");
        Secret(value)
    }

    /// Wraps a short-lived token (an OAuth access token): registered for redaction among
    /// the newest few tokens only.
    pub fn token(value: impl Into<String>) -> Self {
        let value = value.into();
        crate::internal::redact::register_token(&value, "an access token");
        Secret(value)
    }

    /// The key, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A source of OAuth access tokens (Google Application Default Credentials).
#[async_trait]
pub trait TokenSource: Send + Sync {
    /// A valid access token (sources cache and refresh).
    async fn token(&self) -> Result<Secret>;
}

/// How a backend's requests are authenticated.
#[derive(Clone)]
pub enum Credential {
    /// No credential.
    None,
    /// `Authorization: Bearer <key>`.
    Bearer(Secret),
    /// `<header>: <key>` (`x-api-key`, `x-goog-api-key`).
    Header(&'static str, Secret),
    /// `Authorization: Bearer <token>` from a token source.
    Token(Arc<dyn TokenSource>),
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::None => f.write_str("Credential::None"),
            Credential::Bearer(_) => f.write_str("Credential::Bearer(***)"),
            Credential::Header(h, _) => write!(f, "Credential::Header({h}, ***)"),
            Credential::Token(_) => f.write_str("Credential::Token"),
        }
    }
}

impl Credential {
    /// The header that carries the credential, if any (its value marked sensitive, so
    /// no debug print shows it).
    pub async fn header(&self) -> Result<Option<(HeaderName, HeaderValue)>> {
        let (name, value) = match self {
            Credential::None => return Ok(None),
            Credential::Bearer(key) => (AUTHORIZATION, format!("Bearer {}", key.expose())),
            Credential::Header(name, key) => (
                HeaderName::try_from(*name).map_err(|_| {
                    Error::Config(format!(
                        "`{name}` is not a valid header name for a credential"
                    ))
                })?,
                key.expose().to_string(),
            ),
            Credential::Token(source) => (
                AUTHORIZATION,
                format!("Bearer {}", source.token().await?.expose()),
            ),
        };
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            Error::Config(format!(
                "the credential cannot be sent in the `{name}` header: it holds a character \
                 a header cannot (a line break or a control character); check the key's variable"
            ))
        })?;
        value.set_sensitive(true);
        Ok(Some((name, value)))
    }
}

/// The OAuth scope Vertex AI needs.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Application Default Credentials through the `gcp_auth` crate: the file named by
/// `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's ADC file, the metadata server, or the
/// `gcloud` command, in that order. Found on first use, then cached with its tokens.
/// (The `google-auth` feature, on by default.)
///
/// [`GoogleAdc::from_file`] takes the key file's path from the caller instead, so that a
/// `GOOGLE_APPLICATION_CREDENTIALS` read from an env file (which never enters the process
/// environment `gcp_auth` reads) is the one used.
#[cfg(feature = "google-auth")]
#[derive(Default)]
pub struct GoogleAdc {
    provider: OnceCell<Arc<dyn gcp_auth::TokenProvider>>,
    /// The service-account key file to use, when given rather than looked up.
    file: Option<std::path::PathBuf>,
}

#[cfg(feature = "google-auth")]
impl GoogleAdc {
    /// A source that looks for credentials on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// A source using the service-account key file at `path` (what
    /// `GOOGLE_APPLICATION_CREDENTIALS` names), read on first use.
    pub fn from_file(path: impl Into<std::path::PathBuf>) -> Self {
        GoogleAdc {
            provider: OnceCell::new(),
            file: Some(path.into()),
        }
    }

    async fn provider(&self) -> Result<&Arc<dyn gcp_auth::TokenProvider>> {
        if let Some(path) = &self.file {
            return self
                .provider
                .get_or_try_init(|| async {
                    gcp_auth::CustomServiceAccount::from_file(path)
                        .map(|a| Arc::new(a) as Arc<dyn gcp_auth::TokenProvider>)
                        .map_err(|e| unusable_key_file(path, &e))
                })
                .await;
        }
        self.provider
            .get_or_try_init(|| async {
                gcp_auth::provider().await.map_err(|e| {
                    // gcp_auth reads this variable itself; when it is set, the file it
                    // names is the problem, and gcp_auth's message does not name it.
                    match std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS") {
                        Some(path) => unusable_key_file(Path::new(&path), &e),
                        None => Error::Config(format!(
                            "no Google Application Default Credentials found ({e}); run \
                             `gcloud auth application-default login`, or set \
                             GOOGLE_APPLICATION_CREDENTIALS to a service-account key file"
                        )),
                    }
                })
            })
            .await
    }
}

/// The key file `GOOGLE_APPLICATION_CREDENTIALS` names could not be used.
#[cfg(feature = "google-auth")]
fn unusable_key_file(path: &Path, e: &gcp_auth::Error) -> Error {
    Error::Config(format!(
        "GOOGLE_APPLICATION_CREDENTIALS names `{}`, which is not a usable \
         service-account key file ({e}); point it at the JSON key file \
         of a service account, or unset it to use gcloud's credentials",
        path.display()
    ))
}

#[cfg(feature = "google-auth")]
#[async_trait]
impl TokenSource for GoogleAdc {
    async fn token(&self) -> Result<Secret> {
        let token = self
            .provider()
            .await?
            .token(&[CLOUD_PLATFORM_SCOPE])
            .await
            .map_err(token_error)?;
        Ok(Secret::token(token.as_str()))
    }
}

/// A failed token request: the token endpoint could not be reached (a transport error,
/// worth retrying), or it answered and refused the grant (an auth error).
#[cfg(feature = "google-auth")]
fn token_error(e: gcp_auth::Error) -> Error {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    match e {
        gcp_auth::Error::Http(..) | gcp_auth::Error::Other(..) => Error::Transport {
            backend: "google-adc".into(),
            message: format!("no access token from the OAuth token endpoint: {message}"),
        },
        _ => Error::Auth(Box::new(crate::error::ProviderDetails {
            backend: "google-adc".into(),
            message: format!(
                "could not get an access token from Application Default Credentials: {message}"
            ),
            ..Default::default()
        })),
    }
}
