#!/usr/bin/env bash
# run-local.sh: run mcrib locally against a real Consul and six memcached.
#
# Starts, all on loopback:
#   - a Consul dev agent (HTTP on 8500, or free ports when 8500 is taken),
#   - six memcached on 11211..11216 (a free port for each one taken),
#     registered in Consul as service "memcached", IDs mc-1..mc-6, a TCP
#     check every 1s, service meta az a, b, c, a, b, c,
#   - mcrib serve --slots 4 --hold 30s on 127.0.0.1:7070 (or a free port).
# Extra arguments are passed on to `mcrib serve`.
#
# Ctrl-C (or SIGTERM) stops everything it started. Logs go to a temporary
# directory whose path is printed; it is removed on exit unless something
# failed or MCRIB_KEEP_LOGS=1.
#
# Environment: MCRIB_BIN (default bin/mcrib), CONSUL_BIN (default bin/consul),
# MEMCACHED_BIN (default: memcached in PATH).
set -euo pipefail
cd "$(dirname "$0")/.."

mcrib_bin=${MCRIB_BIN:-bin/mcrib}
consul_bin=${CONSUL_BIN:-bin/consul}
memcached_bin=${MEMCACHED_BIN:-$(command -v memcached || echo /usr/bin/memcached)}

die() { echo "run-local: $*" >&2; exit 1; }
[ -x "$mcrib_bin" ] || die "$mcrib_bin is missing: run 'make build'"
[ -x "$consul_bin" ] || die "$consul_bin is missing: run 'make deps'"
[ -x "$memcached_bin" ] || die "memcached is missing: run 'make deps'"
command -v curl >/dev/null || die "curl is missing (apt-get install curl)"

# Every background job gets its own process group, so cleanup can kill a
# process together with anything it forked, and a terminal's Ctrl-C reaches
# only this script (whose trap then stops the rest in order).
set -m

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcrib-run.XXXXXX")
pids=()
signalled=0

cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [ "${#pids[@]}" -gt 0 ]; then
		echo "run-local: stopping ${#pids[@]} processes"
		# Newest first (mcrib before Consul), each given up to 10s to exit
		# cleanly before its whole process group is killed.
		local i
		for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
			stop_group "${pids[i]}"
		done
		wait 2>/dev/null || true
	fi
	if { [ "$status" -ne 0 ] && [ "$signalled" = 0 ]; } || [ "${MCRIB_KEEP_LOGS:-}" = 1 ]; then
		echo "run-local: logs kept in $tmp"
	else
		rm -rf "$tmp"
	fi
	exit "$status"
}
# stop_group PGID: SIGTERM the process group, SIGKILL it after 10s.
stop_group() {
	kill -TERM -- "-$1" 2>/dev/null || return 0
	local n
	for n in $(seq 100); do
		kill -0 -- "-$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL -- "-$1" 2>/dev/null || true
}

trap cleanup EXIT
trap 'signalled=1; exit 130' INT
trap 'signalled=1; exit 143' TERM

# busy PORT: something accepts TCP connections on 127.0.0.1:PORT.
busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick VAR PREFERRED: set VAR to PREFERRED when free, else to a free port
# from 20000 up, never one this script picked already.
picked=" "
pick() {
	local p=$2
	if busy "$p" || [[ "$picked" == *" $p "* ]]; then
		p=$((20000 + RANDOM % 20000))
		while busy "$p" || [[ "$picked" == *" $p "* ]]; do p=$((p + 1)); done
	fi
	picked+="$p "
	printf -v "$1" '%s' "$p"
}

# wait_for WHAT SECONDS PID COMMAND...: run COMMAND until it succeeds; fail
# when SECONDS pass or process PID (unless "-") exits first.
wait_for() {
	local what=$1 secs=$2 pid=$3
	shift 3
	local deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if [ "$pid" != - ] && ! kill -0 "$pid" 2>/dev/null; then
			die "$what exited before it was ready (logs in $tmp)"
		fi
		[ "$SECONDS" -lt "$deadline" ] || die "$what was not ready within ${secs}s (logs in $tmp)"
		sleep 0.1
	done
}

pick http_port 8500
pick serf_lan 8301
pick serf_wan 8302
pick server_port 8300
consul_addr=127.0.0.1:$http_port
if [ "$http_port $serf_lan $serf_wan $server_port" != "8500 8301 8302 8300" ]; then
	echo "run-local: default Consul ports taken; using HTTP $http_port, serf LAN $serf_lan, serf WAN $serf_wan, server $server_port"
fi
echo "run-local: logs in $tmp"

"$consul_bin" agent -dev -bind 127.0.0.1 -client 127.0.0.1 \
	-http-port "$http_port" -dns-port -1 -grpc-port -1 \
	-serf-lan-port "$serf_lan" -serf-wan-port "$serf_wan" -server-port "$server_port" \
	-node mcrib-local -log-level warn -hcl 'disable_update_check = true' \
	>"$tmp/consul.log" 2>&1 &
pids+=($!)
leader() { curl -sf --max-time 2 "http://$consul_addr/v1/status/leader" | grep -q 127.0.0.1; }
wait_for "Consul" 60 "$!" leader

memcached_user=()
[ "$(id -u)" = 0 ] && memcached_user=(-u root)
answers() { # answers PORT: memcached on PORT answers `version`.
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'version\r\n' >&3
	local line
	read -r -t 1 line <&3 && [[ "$line" == VERSION* ]]
	local ok=$?
	exec 3<&- 3>&-
	return $ok
}
azs=(a b c)
for i in 1 2 3 4 5 6; do
	pick port $((11210 + i))
	"$memcached_bin" -l 127.0.0.1 -p "$port" -U 0 -m 64 -t 2 "${memcached_user[@]}" \
		>"$tmp/memcached-mc-$i.log" 2>&1 &
	pids+=($!)
	wait_for "memcached mc-$i on port $port" 20 "$!" answers "$port"
	az=${azs[$(((i - 1) % 3))]}
	curl -sf --max-time 2 -X PUT "http://$consul_addr/v1/agent/service/register" -d @- >/dev/null <<JSON ||
{"ID": "mc-$i", "Name": "memcached", "Address": "127.0.0.1", "Port": $port,
 "Meta": {"az": "$az"},
 "Check": {"Name": "memcached tcp 127.0.0.1:$port", "TCP": "127.0.0.1:$port",
           "Interval": "1s", "Timeout": "500ms"}}
JSON
		die "registering mc-$i in Consul failed"
	echo "run-local: memcached mc-$i on 127.0.0.1:$port (az $az)"
done

all_passing() {
	[ "$(curl -sf --max-time 2 "http://$consul_addr/v1/health/state/passing" | grep -c '"ServiceID": *"mc-[1-6]"')" = 6 ]
}
wait_for "the six memcached checks to pass" 30 - all_passing

pick listen_port 7070
listen=127.0.0.1:$listen_port
"$mcrib_bin" serve --consul "$consul_addr" --slots 4 --listen "$listen" --hold 30s "$@" \
	>"$tmp/mcrib.log" 2>&1 &
mcrib_pid=$!
pids+=("$mcrib_pid")
# Show mcrib's log here too; tail stops by itself within a second of mcrib
# exiting, so it prints mcrib's last words on shutdown as well.
tail -n +1 -f --pid="$mcrib_pid" "$tmp/mcrib.log" &
healthz() { curl -sf --max-time 2 "http://$listen/healthz"; }
wait_for "mcrib" 30 "$mcrib_pid" healthz

echo
echo "mcrib dashboard and API: http://$listen/"
echo "Consul UI:               http://$consul_addr/ui/"
echo "logs:                    $tmp"
echo "Press Ctrl-C to stop everything."
echo

# Wait for mcrib; a signal interrupts the wait and runs the traps.
set +e
wait "$mcrib_pid"
status=$?
set -e
echo "run-local: mcrib exited with status $status"
exit "$status"
