#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME (default 30s) and prints, per target,
# the executions it reached. `make fuzz` calls it; `make test` (plain
# `go test`) only replays the committed corpora under testdata/fuzz/.
# A failing input is written by Go into the package's testdata/fuzz/ and
# the script exits 1 after the remaining targets.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
# Minimising a new input is capped by executions: coverage that depends on
# map order makes Go's minimiser retry for up to its default minute, during
# which a target executes nothing new.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-1000x}
targets=(
	cachenodes:FuzzParseSlotMap
	cachenodes:FuzzReadStats
	cachenodes:FuzzKeySlot
	controlloop:FuzzParseFreezeRequest
	hitrate:FuzzMeter
	ratelimit:FuzzParseSetting
	ratelimit:FuzzParseDocument
	ratelimit:FuzzAdmitter
	cmd/mcrib:FuzzServeFlags
	internal/cli:FuzzParseAddr
)
status=0
summary=()
for t in "${targets[@]}"; do
	pkg=${t%%:*} name=${t#*:}
	log=$(mktemp)
	if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "./$pkg" >"$log" 2>&1; then
		status=1
		cat "$log"
	fi
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	summary+=("$(printf '%-10s %-24s %12s execs in %s' "$pkg" "$name" "${execs:-?}" "$FUZZTIME")")
	rm -f "$log"
done
printf '%s\n' "${summary[@]}"
exit $status
