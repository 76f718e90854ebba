#!/usr/bin/env bash
# bench-boot.sh: POST /v1/boot over loopback under load with wrk, beside
# GET /healthz on the same server as the baseline, in the same run.
# Starts its own Consul dev agent, one memcached and mcrib serve on free
# loopback ports; stops them all on exit.
#   usage: scripts/bench-boot.sh [duration, default 10s] [connections, default 8; env threads (default 1)]
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
conns=${2:-8}
for bin in bin/consul bin/mcrib; do
  [ -x "$bin" ] || { echo "bench-boot: $bin is missing: run 'make build' first" >&2; exit 1; }
done
command -v wrk >/dev/null || { echo "bench-boot: wrk is missing (apt-get install wrk)" >&2; exit 1; }
command -v memcached >/dev/null || { echo "bench-boot: memcached is missing" >&2; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

http=$(free_port); serf=$(free_port); wan=$(free_port); server=$(free_port)
bin/consul agent -dev -bind 127.0.0.1 -client 127.0.0.1 -http-port "$http" -dns-port -1 -grpc-port -1 \
  -serf-lan-port "$serf" -serf-wan-port "$wan" -server-port "$server" -log-level error >"$tmp/consul.log" 2>&1 &
pids+=($!)
until curl -sf "http://127.0.0.1:$http/v1/status/leader" | grep -q 127; do sleep 0.2; done
mport=$(free_port)
memcached -l 127.0.0.1 -p "$mport" -U 0 $( [ "$(id -u)" = 0 ] && echo -u root ) &
pids+=($!)
curl -sf -X PUT "http://127.0.0.1:$http/v1/agent/service/register" \
  -d "{\"ID\":\"mc-1\",\"Name\":\"memcached\",\"Address\":\"127.0.0.1\",\"Port\":$mport}" >/dev/null
api=127.0.0.1:$(free_port)
bin/mcrib serve --consul "127.0.0.1:$http" --listen "$api" --slots 1 --boot-limit-max 1000000000 --log-format json >"$tmp/mcrib.log" 2>&1 &
pids+=($!)
until curl -sf "http://$api/readyz" >/dev/null; do sleep 0.2; done
curl -sf -X PUT "http://$api/v1/ratelimit" -H 'Content-Type: application/json' -d '{"mode":"manual","limit":1000000000,"burst":1000000000}' >/dev/null

cat >"$tmp/post.lua" <<'LUA'
wrk.method = "POST"
LUA
echo "== baseline: GET /healthz, $dur, $conns connections"
wrk -t"${threads:-1}" -c"$conns" -d"$dur" --latency "http://$api/healthz" | tee "$tmp/base.txt"
echo "== POST /v1/boot (limit 1e9: every boot admitted), $dur, $conns connections"
wrk -t"${threads:-1}" -c"$conns" -d"$dur" --latency -s "$tmp/post.lua" "http://$api/v1/boot" | tee "$tmp/boot.txt"
rps() { awk '/Requests\/sec/ {print $2}' "$1"; }
p99() { awk '$1=="99%" {print $2}' "$1"; }
echo "== summary"
echo "healthz: $(rps "$tmp/base.txt") req/s, p99 $(p99 "$tmp/base.txt")"
echo "boot:    $(rps "$tmp/boot.txt") req/s, p99 $(p99 "$tmp/boot.txt")"
awk -v b="$(rps "$tmp/boot.txt")" -v h="$(rps "$tmp/base.txt")" 'BEGIN { printf "boot/healthz throughput ratio: %.2f\n", b/h }'
