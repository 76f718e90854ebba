#!/usr/bin/env bash
# run-local.sh: run mcrib locally against a real Consul and six memcached.
#
# Starts, all on loopback:
#   - a Consul dev agent (HTTP on 8500, or free ports when 8500 is taken),
#   - six memcached on 11211..11216 (a free port for each one taken),
#     registered in Consul as service "memcached", IDs mc-1..mc-6, a TCP
#     check every 1s, service meta az a, b, c, a, b, c,
#   - mcrib serve --slots 4 --hold 30s on 127.0.0.1:7070 (MCRIB_RUN_PORT
#     asks for another port; when that one is taken, a free port: then it
#     says so loudly, and prints the MCRIB_ADDR the CLI needs).
# A port counts as taken only while something listens on it (or a UDP
# socket is bound to it): the connections of an earlier run, which the
# kernel keeps in TIME_WAIT for a minute, do not move the next run.
# Extra arguments are passed on to `mcrib serve`.
#
# Stopping. Ctrl-C, SIGTERM, or SIGHUP (the terminal closed) stop every
# process it started, newest first (mcrib before Consul), each with SIGTERM
# and, after 10 s (or at once on a second Ctrl-C), SIGKILL; then it exits
# 0. The cleanup goes on when the output is gone: after Ctrl-C under
# `make run 2>&1 | tee run.log` tee may be dead, and after the terminal
# closed every write fails; a write that fails is skipped, never fatal.
# On a terminal, a small guard (perl, from Debian's perl-base) holds the
# terminal's foreground for the run and hands Ctrl-C on to this script, so
# that make and tee never get it: make exits 0 instead of reporting
# "Error 130", and tee logs the cleanup too. Without perl, Ctrl-C still
# stops everything, but make reports the interrupt.
#
# Logs go to a temporary directory whose path is printed; it is removed on
# exit unless something failed or MCRIB_KEEP_LOGS=1.
#
# Environment: MCRIB_BIN (default bin/mcrib), CONSUL_BIN (default bin/consul),
# MEMCACHED_BIN (default: memcached in PATH), MCRIB_RUN_PORT (default 7070).
set -euo pipefail
cd "$(dirname "$0")/.."

mcrib_bin=${MCRIB_BIN:-bin/mcrib}
consul_bin=${CONSUL_BIN:-bin/consul}
memcached_bin=${MEMCACHED_BIN:-$(command -v memcached || echo /usr/bin/memcached)}

# say LINE...: print on stdout; a write that fails (a closed pipe, a
# terminal that hung up) is skipped.
say() { printf '%s\n' "$@" 2>/dev/null || true; }
# warn LINE: print on stderr, likewise.
warn() { printf '%s\n' "$1" >&2 2>/dev/null || true; }
die() {
	warn "run-local: $*"
	exit 1
}
[ -x "$mcrib_bin" ] || die "$mcrib_bin is missing: run 'make build'"
[ -x "$consul_bin" ] || die "$consul_bin is missing: run 'make deps'"
[ -x "$memcached_bin" ] || die "memcached is missing: run 'make deps'"
command -v curl >/dev/null || die "curl is missing (apt-get install curl)"

# A write into a closed pipe returns an error (which say skips) instead of
# killing this script halfway through its cleanup. A trap, not an ignored
# signal: the processes it starts get the default back.
trap : PIPE

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcrib-run.XXXXXX")
pids=()     # what cleanup stops, oldest first: each a process group leader
stopping=0  # a stop was asked for (Ctrl-C, SIGTERM, SIGHUP)
hurry=0     # a second Ctrl-C came during the cleanup: SIGKILL at once

cleanup() {
	local status=$?
	set +e
	trap - EXIT
	trap 'hurry=1; say "run-local: Ctrl-C again: killing what is left at once"' INT
	trap '' TERM HUP
	if [ "${#pids[@]}" -gt 0 ]; then
		say "run-local: stopping ${#pids[@]} processes (Ctrl-C again to kill them at once)"
		local i
		for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
			stop_group "${pids[i]}"
		done
		wait 2>/dev/null
	fi
	if { [ "$status" -ne 0 ] && [ "$stopping" = 0 ]; } || [ "${MCRIB_KEEP_LOGS:-}" = 1 ]; then
		say "run-local: logs kept in $tmp"
	else
		rm -rf "$tmp"
	fi
	say "run-local: stopped"
	exit "$status"
}
# stop_group PID: SIGTERM the process group PID leads (the process alone
# when it leads none), then SIGKILL it after 10 s, or at once after a
# second Ctrl-C.
stop_group() {
	local target=-$1 n
	kill -0 -- "$target" 2>/dev/null || target=$1
	kill -TERM -- "$target" 2>/dev/null || return 0
	for ((n = 0; n < 100 && hurry == 0; n++)); do
		kill -0 -- "$target" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL -- "$target" 2>/dev/null
	return 0
}
# on_stop WHAT: a stop was asked for; cleanup (the EXIT trap) does it.
on_stop() {
	stopping=1
	say "" "run-local: $1: stopping"
	exit 0
}
trap cleanup EXIT
trap 'on_stop Ctrl-C' INT
trap 'on_stop SIGTERM' TERM
trap 'on_stop "SIGHUP (the terminal closed)"' HUP

# spawn COMMAND...: start COMMAND in the background, stdin from /dev/null,
# in a process group of its own (job control on for that one fork), so
# that no signal of the terminal reaches it and cleanup stops it with
# whatever it forked; cleanup will stop it. $! is its PID.
spawn() {
	set -m
	"$@" </dev/null &
	set +m
	pids+=("$!")
}

# The terminal guard (see "Stopping" above): when this script runs in the
# foreground of a terminal, the guard moves into a process group of its own
# and makes it the terminal's foreground group, so that Ctrl-C reaches only
# the guard, which passes it on to this script as SIGINT (and SIGHUP as
# SIGHUP). On SIGTERM (from cleanup), or when this script is gone, it gives
# the terminal back to the group it took it from. It does nothing without
# a terminal, in the background, or when the terminal stops background
# writers (stty tostop: this script's own output would stop it).
guard_terminal() {
	command -v perl >/dev/null 2>&1 || return 0
	# shellcheck disable=SC2016 # perl code, not shell
	perl -MPOSIX -e '
		my $script = shift;
		open(my $tty, "+<", "/dev/tty") or exit 0;
		my $fd = fileno($tty);
		my $fg = POSIX::tcgetpgrp($fd);
		exit 0 unless defined $fg && $fg == getpgrp();
		my $t = POSIX::Termios->new;
		exit 0 if !$t->getattr($fd) || ($t->getlflag & POSIX::TOSTOP());
		$SIG{TTOU} = "IGNORE";
		setpgrp(0, 0) or exit 0;
		POSIX::tcsetpgrp($fd, getpgrp()) or exit 0;
		my $give_back = sub {
			POSIX::tcsetpgrp($fd, $fg) if POSIX::tcgetpgrp($fd) == getpgrp();
			exit 0;
		};
		$SIG{INT} = $SIG{QUIT} = sub { kill "INT", $script };
		$SIG{TSTP} = "IGNORE";
		$SIG{HUP} = sub { kill "HUP", $script; exit 0 };
		$SIG{TERM} = $give_back;
		while (1) { sleep 1; $give_back->() if getppid() != $script }
	' "$$" </dev/null >/dev/null 2>&1 &
	pids+=("$!")
}
guard_terminal

# in_use PORT: something holds PORT on this host: a TCP socket listening on
# it or a UDP socket bound to it (IPv4 or IPv6), or anything that accepts
# connections on 127.0.0.1:PORT. A connection that merely used the port (a
# CLI's call to an earlier run's mcrib, in TIME_WAIT for a minute after
# that run stopped) holds nothing: mcrib, Consul and memcached bind with
# SO_REUSEADDR, so it would only move this run to a random port.
in_use() {
	local hex f files=()
	printf -v hex ':%04X' "$1"
	for f in /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6; do
		[ -r "$f" ] && files+=("$f")
	done
	# Column 2 is the local address (HEXIP:PORT), column 4 the state (0A:
	# TCP LISTEN); a bound UDP socket holds its port in any state.
	{ [ "${#files[@]}" -gt 0 ] && awk -v port="$hex" '
		FNR > 1 && substr($2, length($2) - 4) == port && (FILENAME ~ /udp/ || $4 == "0A") { found = 1; exit }
		END { exit !found }' "${files[@]}"; } ||
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pick VAR PREFERRED: set VAR to PREFERRED when free, else to a free port
# from 20000 up to 32000 (below Linux's ephemeral ports, which outgoing
# connections take at any moment), never one this script picked already.
picked=" "
pick() {
	local p=$2
	if in_use "$p" || [[ "$picked" == *" $p "* ]]; then
		p=$((20000 + RANDOM % 12000))
		while in_use "$p" || [[ "$picked" == *" $p "* ]]; do p=$((p + 1)); done
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
consul_moved=0
if [ "$http_port $serf_lan $serf_wan $server_port" != "8500 8301 8302 8300" ]; then
	consul_moved=1
	say "run-local: default Consul ports taken; using HTTP $http_port, serf LAN $serf_lan, serf WAN $serf_wan, server $server_port"
fi

# What holds the port asked for, when mcrib cannot have it, and the
# address the CLI must be given when it is not 7070 (the CLI's default);
# said loudly at once and again at the end.
want_port=${MCRIB_RUN_PORT:-7070}
[[ "$want_port" =~ ^[0-9]+$ ]] && [ "$want_port" -ge 1 ] && [ "$want_port" -le 65535 ] ||
	die "MCRIB_RUN_PORT=$want_port is not a port number"
pick listen_port "$want_port"
listen=127.0.0.1:$listen_port
moved_warning=()
if [ "$listen_port" != 7070 ]; then
	why="MCRIB_RUN_PORT=$want_port asks for it"
	if [ "$listen_port" != "$want_port" ]; then
		holder="something else"
		if curl -sf --max-time 1 "http://127.0.0.1:$want_port/v1/status" 2>/dev/null | grep -q '"leader_id"'; then
			holder="another mcrib (an earlier 'make run' still running? ss -ltnp 'sport = :$want_port' names it)"
		fi
		why="127.0.0.1:$want_port is taken, by $holder"
	fi
	moved_warning=(
		"run-local: ************************************************************************"
		"run-local: $why,"
		"run-local: so this mcrib listens on $listen. bin/mcrib talks to 7070 unless told:"
		"run-local:     export MCRIB_ADDR=http://$listen"
		"run-local: or  bin/mcrib --addr http://$listen status"
		"run-local: ************************************************************************"
	)
	say "${moved_warning[@]}"
fi
say "run-local: logs in $tmp"

spawn "$consul_bin" agent -dev -bind 127.0.0.1 -client 127.0.0.1 \
	-http-port "$http_port" -dns-port -1 -grpc-port -1 \
	-serf-lan-port "$serf_lan" -serf-wan-port "$serf_wan" -server-port "$server_port" \
	-node mcrib-local -log-level warn -hcl 'disable_update_check = true' \
	>"$tmp/consul.log" 2>&1
consul_pid=$!

# The six memcached start while Consul elects itself.
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
mc_ports=() mc_pids=()
for i in 1 2 3 4 5 6; do
	pick port $((11210 + i))
	spawn "$memcached_bin" -l 127.0.0.1 -p "$port" -U 0 -m 64 -t 2 "${memcached_user[@]}" \
		>"$tmp/memcached-mc-$i.log" 2>&1
	mc_ports+=("$port") mc_pids+=("$!")
done

leader() { curl -sf --max-time 2 "http://$consul_addr/v1/status/leader" | grep -q 127.0.0.1; }
wait_for "Consul" 60 "$consul_pid" leader

for i in 1 2 3 4 5 6; do
	port=${mc_ports[i - 1]}
	wait_for "memcached mc-$i on port $port" 20 "${mc_pids[i - 1]}" answers "$port"
	az=${azs[$(((i - 1) % 3))]}
	curl -sf --max-time 2 -X PUT "http://$consul_addr/v1/agent/service/register" -d @- >/dev/null <<JSON ||
{"ID": "mc-$i", "Name": "memcached", "Address": "127.0.0.1", "Port": $port,
 "Meta": {"az": "$az"},
 "Check": {"Name": "memcached tcp 127.0.0.1:$port", "TCP": "127.0.0.1:$port",
           "Interval": "1s", "Timeout": "500ms"}}
JSON
		die "registering mc-$i in Consul failed"
	say "run-local: memcached mc-$i on 127.0.0.1:$port (az $az)"
done

all_passing() {
	[ "$(curl -sf --max-time 2 "http://$consul_addr/v1/health/state/passing" | grep -c '"ServiceID": *"mc-[1-6]"')" = 6 ]
}
wait_for "the six memcached checks to pass" 30 - all_passing

: >"$tmp/mcrib.log"
spawn "$mcrib_bin" serve --consul "$consul_addr" --slots 4 --listen "$listen" --hold 30s "$@" \
	>"$tmp/mcrib.log" 2>&1
mcrib_pid=$!
# Show mcrib's log here too; tail stops by itself within a second of mcrib
# exiting, so it prints mcrib's last words on shutdown as well.
spawn tail -n +1 -f --pid="$mcrib_pid" "$tmp/mcrib.log"
healthz() { curl -sf --max-time 2 "http://$listen/healthz"; }
wait_for "mcrib" 30 "$mcrib_pid" healthz

say "" \
	"mcrib dashboard and API: http://$listen/" \
	"Consul UI:               http://$consul_addr/ui/" \
	"logs:                    $tmp"
[ "$consul_moved" = 0 ] || say "bin/consul needs:        export CONSUL_HTTP_ADDR=$consul_addr"
[ "${#moved_warning[@]}" = 0 ] || say "${moved_warning[@]}"
say "Press Ctrl-C to stop everything." ""

# Wait for mcrib; a signal interrupts the wait and runs its trap.
set +e
wait "$mcrib_pid"
status=$?
set -e
say "run-local: mcrib exited with status $status"
exit "$status"
