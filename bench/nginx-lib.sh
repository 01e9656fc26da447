# Sourced by the bench scripts: an nginx of one worker, in the foreground, with its pid,
# logs and temporary files in a folder of its own; the gateway started and stopped; the
# calls a store recorded.

# nginx_start DIR HTTP_LINES: writes DIR/nginx.conf around HTTP_LINES (the `server` and
# `upstream` blocks), starts it in the background and returns once it listens; its pid is
# left in NGINX_STARTED.
nginx_start() {
  local dir=$1 lines=$2
  mkdir -p "$dir/tmp"
  cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/tmp;
  proxy_temp_path $dir/tmp;
  fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp;
  scgi_temp_path $dir/tmp;
  keepalive_requests 1000000;
$lines
}
CONF
  nginx -c "$dir/nginx.conf" &
  NGINX_STARTED=$!
  # nginx writes its pid file once its sockets listen: a measurement started before
  # then fails, and a script would read its empty result as zero.
  local waited=0
  until [ -s "$dir/nginx.pid" ]; do
    if ! kill -0 "$NGINX_STARTED" 2>/dev/null || [ $waited -ge 100 ]; then
      echo "nginx did not start (see $dir/error.log)" >&2
      return 1
    fi
    sleep 0.05
    waited=$((waited + 1))
  done
}

# fixed_bodies [CHUNKS]: sets CHAT (a chat completion), MESSAGES (a Messages reply) and SSE
# (a chat stream: the role, CHUNKS word deltas (20 unless given), a finish, a usage chunk
# and [DONE]), the answers every bench's static nginx serves.
fixed_bodies() {
  CHAT='{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"fixed","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there! I am doing well, thank you for asking."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":13,"total_tokens":25}}'
  MESSAGES='{"id":"msg_1","type":"message","role":"assistant","model":"fixed","content":[{"type":"text","text":"Hello there! I am doing well, thank you for asking."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":13}}'
  SSE=$(python3 - "${1:-20}" <<'EOF'
import json, sys
n = int(sys.argv[1])
def chunk(delta, finish=None, usage=None):
    c = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "fixed",
         "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        c["usage"] = usage
    return "data: " + json.dumps(c, separators=(",", ":")) + "\\n\\n"
out = chunk({"role": "assistant", "content": ""})
out += "".join(chunk({"content": f"word{i} "}) for i in range(n))
out += chunk({}, "stop")
out += chunk(None, usage={"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n})
out += "data: [DONE]\\n\\n"
print(out, end="")
EOF
)
}

# nginx_static PORT: the server block answering the fixed chat completion ($CHAT), the
# fixed Messages reply ($MESSAGES) and the fixed chat SSE stream ($SSE, under /sse).
nginx_static() {
  cat <<CONF
  server {
    listen 127.0.0.1:$1;
    location = /v1/chat/completions { default_type application/json; return 200 '$CHAT'; }
    location = /v1/messages { default_type application/json; return 200 '$MESSAGES'; }
    location = /sse/v1/chat/completions { default_type text/event-stream; return 200 '$SSE'; }
  }
CONF
}

# nginx_proxy DIR PORT UPSTREAM_PORT: a second nginx (one worker) on PORT proxying to the
# static one over kept-alive connections, the floor any proxy meets on these cores; its
# pid is left in NGINX_STARTED.
nginx_proxy() {
  nginx_start "$1" "
  upstream static { server 127.0.0.1:$3; keepalive 64; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$2;
    location / { proxy_pass http://static; proxy_http_version 1.1; proxy_set_header Connection \"\"; }
  }"
}

# gateway_backends PORT: the gateway's backends on the static nginx at PORT, each priced:
# ngx (chat), ngxm (Messages, the translated case) and ngxs (the chat stream).
gateway_backends() {
  cat <<YAML
backends:
  ngx: {base_url: "http://127.0.0.1:$1/v1", apis: [chat], key_required: false, prices: {fixed: {input: 1, output: 2}}}
  ngxm: {base_url: "http://127.0.0.1:$1/v1", apis: [messages], key_required: false, auth: none, prices: {fixed: {input: 1, output: 2}}}
  ngxs: {base_url: "http://127.0.0.1:$1/sse/v1", apis: [chat], key_required: false, prices: {fixed: {input: 1, output: 2}}}
YAML
}

# wrk_measure CONNS BODY URL: wrk (one thread, kept-alive connections, bench/post.lua with
# BODY) for $DUR, then "req/s p50 p99" (latencies in µs), with " non2xx=N" when some calls
# failed. wrk's report is read once wrk has exited: a parser started beside it (python's
# start-up takes some 75 ms of CPU) took a core from the calls being measured, in the
# first 2 % of a 4 s run, and showed as their p99.
wrk_measure() {
  local report
  report=$(BODY="$2" wrk -t1 -c"$1" -d"$DUR" --latency -s bench/post.lua "$3")
  python3 -c '
import re, sys
t = sys.stdin.read()
def us(v):
    n, unit = re.match(r"([\d.]+)(\w+)", v).groups()
    return float(n) * {"us": 1, "ms": 1e3, "s": 1e6}[unit]
if not re.search(r"^\s+99%", t, re.M):
    sys.exit("wrk reported no latencies for " + sys.argv[1] + ": " + (t.strip() or "nothing"))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
p50 = us(re.search(r"^\s+50%\s+(\S+)", t, re.M).group(1))
p99 = us(re.search(r"^\s+99%\s+(\S+)", t, re.M).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
print(f"{rps:.0f} {p50:.0f} {p99:.0f}" + (f" non2xx={bad.group(1)}" if bad else ""))' "$3" <<<"$report"
}

# gateway_start BIN CONFIG [serve arguments…]: `BIN serve` on 127.0.0.1:$GW_PORT with CONFIG
# and no built-in mock, in the background, its pid in GW_PID; returns once /healthz answers
# (exits the script when it never does). gateway_stop stops it and waits for it.
gateway_start() {
  local bin=$1 config=$2
  shift 2
  RUST_LOG=warn "$bin" serve --listen "127.0.0.1:$GW_PORT" --no-mock --config "$config" "$@" >/dev/null &
  GW_PID=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$GW_PORT/healthz" >/dev/null && return; sleep 0.05; done
  echo "the gateway did not start" >&2
  exit 1
}
gateway_stop() { [ -n "${GW_PID:-}" ] && kill "$GW_PID" 2>/dev/null && wait "$GW_PID" 2>/dev/null; GW_PID=; true; }

# recorded BIN DIR: the calls DIR's log holds, as `BIN log stats` counts them. Not its
# lines: a record of format 4 is its line, then the reply's bytes, newlines among them.
recorded() { "$1" log stats "$2" 2>/dev/null | sed -n 's/^total: \([0-9]*\) call.*/\1/p'; }
