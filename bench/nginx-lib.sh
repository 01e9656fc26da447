# Sourced by the bench scripts: an nginx of one worker, in the foreground, with its pid,
# logs and temporary files in a folder of its own.

# nginx_start DIR HTTP_LINES: writes DIR/nginx.conf around HTTP_LINES (the `server` and
# `upstream` blocks) and starts it in the background; its pid is left in NGINX_STARTED.
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
