//! The connection pool a backend's calls go through: hyper-util's pooled client driven
//! directly (rustls for TLS, with the same web PKI roots and ring provider reqwest was
//! built with), or reqwest when a proxy is configured in the environment.
//!
//! Why not reqwest on every call: its layers around the same hyper-util client (a
//! redirect policy that parses the URL again on every request even with redirects off,
//! a retry layer, its own request and body types) cost about 30,000 instructions a call,
//! a fifth of a passed-through call (docs/performance.md, "The upstream client"). What
//! reqwest adds that a backend needs is its proxy support (`HTTPS_PROXY`, `NO_PROXY`…),
//! so a process whose environment names a proxy keeps it. Either way the certificates
//! are checked against the bundled web roots and those of `SSL_CERT_FILE`.

use crate::error::{Error, Result};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::HeaderMap;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// An error of the transport, with its causes.
pub(crate) type TransportError = Box<dyn std::error::Error + Send + Sync>;

/// The variable naming a PEM file of more certificate authorities to trust (as curl,
/// OpenSSL and Python's `requests` read it).
const CERT_FILE_VARIABLE: &str = "SSL_CERT_FILE";

/// The variables that name a proxy, which reqwest reads (in either case).
const PROXY_VARIABLES: [&str; 3] = ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"];

/// How long an upstream connection stays pooled unused before it is closed. The pool's
/// sweep runs once per this period, so a connection goes at most twice this after its
/// last call: the connections a burst of calls opened are gone within a minute of it
/// (docs/performance.md, *Idle connections and memory given back*), and an idle one is
/// closed by this side before a server's own keep-alive deadline (nginx's default is 75 s)
/// can close it as the next call is sent on it. hyper-util's and reqwest's default, 90 s,
/// kept a burst's upstream connections, some 30 KB each with their buffers, for up to
/// three minutes.
pub const POOL_IDLE: Duration = Duration::from_secs(20);

/// A backend's connection pool (cheap to clone: clones share the connections).
#[derive(Clone)]
pub struct HttpClient {
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    // One pool per lane and one for every other thread (`internal::lanes::slot`), so a
    // connection's task runs on the thread of the calls that use it.
    Direct(Arc<[DirectClient]>),
    Proxied(reqwest::Client),
}

type DirectClient =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.inner {
            Inner::Direct(_) => "HttpClient(direct)",
            Inner::Proxied(_) => "HttpClient(through the environment's proxy)",
        })
    }
}

/// An answer's head, and its body as it arrives.
pub(crate) struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: BoxStream<'static, std::result::Result<Bytes, TransportError>>,
}

/// Why a request got no answer.
pub(crate) struct Failed {
    /// The connection could not be opened within the connect timeout.
    pub connect_timeout: bool,
    pub error: TransportError,
}

/// An HTTP client (a connection pool) for a backend: `TCP_NODELAY`, the connect timeout,
/// HTTP/2 where TLS negotiates it. Redirects are not followed: an API answers where it
/// is called, and a redirected POST would send the prompt (re-sent, or turned into a
/// GET) somewhere the registry does not name; the 3xx comes back as the provider's error
/// instead.
pub fn new_client(backend: &str, connect_timeout: Option<Duration>) -> Result<HttpClient> {
    let failed = |e: &dyn std::fmt::Display| Error::Transport {
        backend: backend.to_string(),
        message: format!("could not build an HTTP client: {e}"),
    };
    let tls = tls().map_err(|e| Error::Config(e.clone()))?;
    if proxy_configured() {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(POOL_IDLE)
            .tcp_nodelay(true);
        if let Some(connect) = connect_timeout {
            builder = builder.connect_timeout(connect);
        }
        for root in &tls.extra_roots {
            let root = reqwest::Certificate::from_der(root).map_err(|e| failed(&e))?;
            builder = builder.add_root_certificate(root);
        }
        let client = builder.build().map_err(|e| failed(&e))?;
        return Ok(HttpClient {
            inner: Inner::Proxied(client),
        });
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(connect_timeout);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls.config.clone())
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    let pools = (0..=crate::internal::lanes::count())
        .map(|_| {
            hyper_util::client::legacy::Client::builder(TokioExecutor::new())
                .pool_idle_timeout(POOL_IDLE)
                .pool_timer(TokioTimer::new())
                .timer(TokioTimer::new())
                .build(connector.clone())
        })
        .collect();
    Ok(HttpClient {
        inner: Inner::Direct(pools),
    })
}

/// What every client's TLS is built from, read once per process: the certificates of
/// `SSL_CERT_FILE`, and the rustls configuration trusting them beside the web roots
/// (shared: the roots are parsed once, not once per backend).
struct Tls {
    extra_roots: Vec<CertificateDer<'static>>,
    config: rustls::ClientConfig,
}

fn tls() -> std::result::Result<&'static Tls, &'static String> {
    static TLS: OnceLock<std::result::Result<Tls, String>> = OnceLock::new();
    TLS.get_or_init(|| {
        let extra_roots = extra_roots()?;
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let extra = extra_roots.len();
        let (_, unusable) = roots.add_parsable_certificates(extra_roots.iter().cloned());
        if extra > 0 && unusable == extra {
            return Err(format!(
                "{CERT_FILE_VARIABLE}: none of its {extra} certificate(s) can be trusted as an \
                 authority (each failed to parse as an X.509 certificate)"
            ));
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS cannot be set up: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Tls {
            extra_roots,
            config,
        })
    })
    .as_ref()
}

/// The certificates of `SSL_CERT_FILE` (a PEM bundle: a company's own authority, or a
/// local server's), trusted beside the bundled web roots; none when it is not set.
fn extra_roots() -> std::result::Result<Vec<CertificateDer<'static>>, String> {
    let Some(path) = std::env::var_os(CERT_FILE_VARIABLE).filter(|p| !p.is_empty()) else {
        return Ok(Vec::new());
    };
    let shown = std::path::Path::new(&path).display().to_string();
    let unreadable = |e: &dyn std::fmt::Display| {
        format!(
            "{CERT_FILE_VARIABLE}={shown}: the certificates cannot be read: {e} \
             (a PEM file of CA certificates is accepted; unset the variable to trust the \
             bundled web roots alone)"
        )
    };
    let certificates = CertificateDer::pem_file_iter(&path)
        .map_err(|e| unreadable(&e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| unreadable(&e))?;
    if certificates.is_empty() {
        return Err(unreadable(&"it holds no `BEGIN CERTIFICATE` block"));
    }
    Ok(certificates)
}

/// Whether the environment names a proxy (then reqwest, which speaks through it, sends).
fn proxy_configured() -> bool {
    PROXY_VARIABLES.iter().any(|name| {
        [name.to_string(), name.to_ascii_lowercase()]
            .iter()
            .any(|n| std::env::var_os(n).is_some_and(|v| !v.is_empty()))
    })
}

impl HttpClient {
    /// Sends a request; its answer's head comes back, the body to be read.
    pub(crate) async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> std::result::Result<Answer, Failed> {
        match &self.inner {
            Inner::Direct(pools) => {
                let client = &pools[crate::internal::lanes::slot()];
                let response =
                    client
                        .request(request.map(Full::new))
                        .await
                        .map_err(|e| Failed {
                            connect_timeout: e.is_connect() && timed_out(&e),
                            error: Box::new(e),
                        })?;
                let (head, body) = response.into_parts();
                Ok(Answer {
                    status: head.status.as_u16(),
                    headers: head.headers,
                    body: body
                        .into_data_stream()
                        .map_err(|e| Box::new(e) as TransportError)
                        .boxed(),
                })
            }
            Inner::Proxied(client) => {
                let request = reqwest::Request::try_from(request).map_err(|e| Failed {
                    connect_timeout: false,
                    error: Box::new(e),
                })?;
                let response = client.execute(request).await.map_err(|e| Failed {
                    connect_timeout: e.is_connect() && e.is_timeout(),
                    error: Box::new(e),
                })?;
                Ok(Answer {
                    status: response.status().as_u16(),
                    headers: response.headers().clone(),
                    body: response
                        .bytes_stream()
                        .map_err(|e| Box::new(e) as TransportError)
                        .boxed(),
                })
            }
        }
    }
}

/// Whether an error's causes include a wait that ran out (hyper-util's connect timeout
/// is an I/O error of that kind).
fn timed_out(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return true;
            }
        }
        source = cause.source();
    }
    false
}
