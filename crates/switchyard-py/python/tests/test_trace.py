"""A run config's `otel:` section exports the calls' spans from Python too, and the
package sends what is queued when the interpreter exits (atexit), with no flush call in
the program: an OTLP/HTTP receiver on loopback gets them."""

import http.server
import subprocess
import sys
import textwrap
import threading


class Receiver(http.server.BaseHTTPRequestHandler):
    posts = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        Receiver.posts.append((self.path, self.headers.get("content-type"), body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_spans_reach_the_collector_when_the_program_exits(tmp_path, mock_server):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = tmp_path / "run.yaml"
        config.write_text(
            f"otel: {{endpoint: 'http://127.0.0.1:{server.server_port}'}}\n"
            "llm:\n  writer: mock/echo\n"
        )
        program = textwrap.dedent(
            f"""
            import switchyard
            with switchyard.mock():
                run = switchyard.Run.open({str(config)!r})
                print(run.llm("writer").complete("hello traces").text)
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "hello traces" in done.stdout
        traces = [p for p in Receiver.posts if p[0] == "/v1/traces"]
        assert traces, f"no export reached the collector: {Receiver.posts!r}"
        path, content_type, body = traces[0]
        assert content_type == "application/x-protobuf"
        # The attribute names and values are plain strings inside the protobuf.
        for expected in [b"gen_ai.operation.name", b"chat", b"gen_ai.request.model", b"echo",
                         b"switchyard.role", b"writer", b"gen_ai.usage.input_tokens"]:
            assert expected in body, expected
    finally:
        server.shutdown()
