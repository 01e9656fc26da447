//! Calls over HTTPS: a local TLS server (Python's, with a certificate authority made by
//! the `openssl` command for the test) reached through the bundled web roots and
//! `SSL_CERT_FILE`.

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A test authority and a server certificate for 127.0.0.1 that it signed.
fn make_certificates(dir: &Path) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("the openssl command runs (apt-get install openssl)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=switchyard test authority",
            ],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"][..],
            &ec,
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
}

const SERVER: &str = r#"
import http.server, json, ssl, sys
class Reply(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        body = json.dumps({"id": "chatcmpl-tls", "object": "chat.completion", "model": "echo",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "over TLS"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Reply)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// The TLS server, killed when dropped, and its port.
struct TlsServer(Child, u16);

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tls_server(dir: &Path) -> TlsServer {
    let python = std::env::var("SWITCHYARD_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = Command::new(python)
        .args(["-c", SERVER])
        .arg(dir.join("server.pem"))
        .arg(dir.join("server.key"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("the server prints its port");
    TlsServer(child, port)
}

fn ask_over_tls(home: &Path, port: u16, cert_file: Option<&Path>) -> Run {
    let mut c = switchyard(home);
    c.args(["ask", "mock/echo", "hello", "--no-stream"])
        .arg(format!(
            "backends.mock.base_url=https://127.0.0.1:{port}/v1"
        ));
    if let Some(file) = cert_file {
        c.env("SSL_CERT_FILE", file);
    }
    run(&mut c)
}

#[test]
fn https_upstreams_are_verified_against_the_web_roots_and_ssl_cert_file() {
    let dir = tempfile::tempdir().unwrap();
    make_certificates(dir.path());
    let server = tls_server(dir.path());

    // The test authority is trusted through SSL_CERT_FILE: the call goes through.
    let r = ask_over_tls(dir.path(), server.1, Some(&dir.path().join("ca.pem")));
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "over TLS\n");

    // Without it, the certificate is refused, and the error says so.
    let r = ask_over_tls(dir.path(), server.1, None);
    assert!(!r.ok);
    assert!(r.err.contains("certificate"), "{}", r.err);
    assert!(r.err.contains("UnknownIssuer"), "{}", r.err);

    // A file that is not there, or holds no certificate, is named in a clear error.
    let r = ask_over_tls(dir.path(), server.1, Some(&dir.path().join("missing.pem")));
    assert!(!r.ok);
    assert!(
        r.err.contains("SSL_CERT_FILE=") && r.err.contains("missing.pem"),
        "{}",
        r.err
    );
    let r = ask_over_tls(dir.path(), server.1, Some(&dir.path().join("server.ext")));
    assert!(!r.ok);
    assert!(
        r.err.contains("holds no `BEGIN CERTIFICATE` block"),
        "{}",
        r.err
    );
}
