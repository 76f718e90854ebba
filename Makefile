# mcrib build, test and local run. GNU make; works as root, or as a normal
# user with sudo for the package installs.
#
#   make deps    install memcached, nutcracker (twemproxy), promtool
#                (prometheus) and chromium from Debian when missing
#                (MCRIB_NO_CHROMIUM=1 skips chromium), and build bin/consul
#                (Consul 1.13.9, ~7 min, only when missing)
#   make build   build bin/mcrib
#   make check   the one-minute loop: gofmt, go vet, staticcheck and
#                go test -race -short, which skips the tests that start
#                Consul, memcached, nutcracker, chromium or a bed of hosts
#                and shortens the simulations; installs nothing, no root
#   make test    deps, go vet, go test -race (CI runs make check, then this,
#                via .ci/run)
#   make run     deps, build, then scripts/run-local.sh (Consul, 6 memcached,
#                mcrib on http://127.0.0.1:7070/, or MCRIB_RUN_PORT); Ctrl-C
#                stops it all, exit 0
#   make bench   run the Go benchmarks and make bench-sim
#   make bench-sim  write the simulator's reports under bench/ (mcrib sim)
#   make bench-real  real Consul agents, 12 memcached, mcrib serve and load; 25%
#                of the agents restarted; report in bench/real-rollout/
#                (BENCH_REAL_DURATION, default 4m)
#   make bench-zones  a bed of hosts (root), 54 memcached in three zones (six
#                to a host), mcrib serve --slots 32 and a cache-aside load
#                through mcclient: the zone holding 10 slots drained in 10%
#                steps (one slot) every 3 s, warm and cold; report in
#                bench/zone-drain/
#   make bench-grow  on loopback, Consul, 32 memcached and mcrib serve --slots 16
#                under a cache-aside load: the pool doubled to 32 slots in 10%
#                steps every 5 s at the default warm flags, with the copy off
#                (--warm-copy-rate 0), with the old fixed 2m window, cold,
#                and the naive resize to a fresh 32-slot map; report in
#                bench/grow/ (about 25 minutes)
#   make bench-drain  on loopback, Consul, 27 memcached in three zones and
#                mcrib serve --slots 16 under the same load: the zone holding
#                6 slots drained in 10% steps (one slot) every 3 s, then
#                undrained, at the default warm flags, with the copy off,
#                with the old fixed 2m window and cold; report in
#                bench/drain/ (about 30 minutes); MCRIB_BENCH_GROW_RUNS or
#                MCRIB_BENCH_DRAIN_RUNS (like "default,copy off") runs only
#                those and the baseline
#   make soak    the fault soak on a bed of hosts for 10 minutes: faults,
#                planned moves (drain, replace, maintenance, a resize)
#                and the stale-read check across generations
#                (SOAK_DURATION, SOAK_SEED; make test runs 60 s of it)
#   make scale   10,000 nodes and 4,096 slots with 1% churn a minute for 10 minutes
#   make dst     the deterministic simulation of the whole pool (package
#                dst): DST_SEEDS seeds (default 50) from DST_FROM, each
#                DST_DURATION simulated (default 10m); make test runs its
#                short fixed set. make dst-selftest finds, for each
#                known bug, a seed that finds it.
#   make mutate  mutation testing of the decision code (tools/mutate, with
#                bin/gremlins v0.6.0 built from tools/mutate only when
#                missing): each mutant against the package tests that cover
#                it and go test ./dst; report in bench/mutate/ (under an
#                hour on two cores; MUTATE_FLAGS=-pkgs=hitrate for one
#                package, -try=FILE:LINE:COL:TYPE for one mutant)
#   make fuzz    run each fuzz target for FUZZTIME (default 30s) and print
#                its executions (make test replays the committed corpora)
#   make clean   remove bin/mcrib and test outputs (keeps bin/consul);
#                make distclean removes bin/ entirely

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO ?= go
GOFMT ?= $(shell $(GO) env GOROOT)/bin/gofmt
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# Package installs need root: use sudo unless we are root already.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

CONSUL := bin/consul
MCRIB := bin/mcrib
GREMLINS := bin/gremlins

.PHONY: deps apt-deps build check test vet run bench bench-sim bench-real bench-zones bench-grow bench-drain scale dst dst-selftest mutate fuzz soak clean distclean

deps: apt-deps $(CONSUL)

apt-deps:
	@missing=(); \
	command -v memcached >/dev/null 2>&1 || [ -x /usr/bin/memcached ] || missing+=(memcached); \
	command -v nutcracker >/dev/null 2>&1 || [ -x /usr/sbin/nutcracker ] || missing+=(nutcracker); \
	command -v promtool >/dev/null 2>&1 || missing+=(prometheus); \
	if [ "$${MCRIB_NO_CHROMIUM:-}" != 1 ]; then \
		command -v chromium >/dev/null 2>&1 || missing+=(chromium); \
	fi; \
	if [ $${#missing[@]} -gt 0 ]; then \
		echo "deps: installing $${missing[*]}"; \
		$(SUDO) apt-get update; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$${missing[@]}"; \
	fi

# Built only when missing (no prerequisites on purpose: it takes minutes).
$(CONSUL):
	@echo "deps: building $(CONSUL) (Consul 1.13.9 from tools/consul; takes several minutes)"
	@mkdir -p $(dir $@)
	cd tools/consul && $(GO) build -o ../../$(CONSUL) github.com/hashicorp/consul

build:
	@mkdir -p $(dir $(MCRIB))
	$(GO) build -ldflags "$(LDFLAGS)" -o $(MCRIB) ./cmd/mcrib

vet:
	$(GO) vet ./...

# The one-minute loop (docs/testing.md). staticcheck is pinned by the tool
# directive of go.mod (go get -tool honnef.co/go/tools/cmd/staticcheck@vX.Y.Z
# moves it); vet and staticcheck see this module's packages, not the module
# tools/consul.
check:
	@unformatted=$$($(GOFMT) -l .); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files are not formatted (gofmt -w them):"; echo "$$unformatted"; exit 1; \
	fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) test -race -short ./...

test: deps vet
	$(GO) test -race -count=1 -timeout 30m ./...

run: deps build
	MCRIB_BIN=$(MCRIB) scripts/run-local.sh

bench: bench-sim
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The real-stack agent rollout (e2e TestBenchRealAgentRollout):
# make test runs its short form.
bench-real: deps
	MCRIB_BENCH_REAL=1 MCRIB_BENCH_REAL_OUT=$(CURDIR)/bench/real-rollout BENCH_REAL_DURATION=$${BENCH_REAL_DURATION:-4m} \
		$(GO) test -count=1 -timeout 30m -run '^TestBenchRealAgentRollout$$' -v ./e2e/

# The zone drain (e2e TestBenchZoneDrain, needs root): zone b
# drained completely in steps of 10% every 3 s under a cache-aside load,
# once with warm moves (--warm-for 2m) and once cold (--warm-for 0s), each
# on a bed of hosts of its own (about 2 minutes in all). Too long for make
# test, which runs only TestBenchZonesTargets.
bench-zones: deps
	MCRIB_BENCH_ZONES=1 MCRIB_BENCH_ZONES_OUT=$(CURDIR)/bench/zone-drain \
		$(GO) test -count=1 -timeout 20m -run '^TestBenchZoneDrain$$' -v ./e2e/

# Growing the pool (e2e TestBenchGrow, loopback, no root): 16 slots and 16
# spares doubled to 32 under a cache-aside load, five times, each on a pool
# of its own: the default warm flags (judged), the copy off, the old fixed
# 2m window, cold, and the naive resize that moves the keys to a fresh
# 32-slot map at once (about 5 minutes each). Too long for make test,
# which runs only TestBenchGrowTargets.
bench-grow: deps
	MCRIB_BENCH_GROW=1 MCRIB_BENCH_GROW_OUT=$(CURDIR)/bench/grow \
		$(GO) test -count=1 -timeout 60m -run '^TestBenchGrow$$' -v ./e2e/

# A zone drain and its undrain (e2e TestBenchDrain, loopback, no root): 3
# zones of 9 memcached, 16 slots, the zone holding 6 drained in steps of
# one slot every 3 s and given back, four times, each on a pool of its own:
# the default warm flags (judged), the copy off, the old fixed 2m window
# and cold, the baseline (7 to 9 minutes each). Too long for make test,
# which runs only TestBenchDrainTargets.
bench-drain: deps
	MCRIB_BENCH_DRAIN=1 MCRIB_BENCH_DRAIN_OUT=$(CURDIR)/bench/drain \
		$(GO) test -count=1 -timeout 60m -run '^TestBenchDrain$$' -v ./e2e/

# The 10,000-node scale run: the real loop and Consul store, 1% churn a
# minute for 10 minutes, without the race detector (make test runs 15 s).
scale: deps
	MCRIB_SCALE_DURATION=$${MCRIB_SCALE_DURATION:-10m} $(GO) test -count=1 -timeout 30m -run TestScaleTenThousandNodes -v ./controlloop/

# The deterministic simulation (package dst), without the race
# detector; a failure prints its seed and the command that replays it.
DST_SEEDS ?= 50
DST_FROM ?= 1
DST_DURATION ?= 10m
dst:
	$(GO) test -count=1 -timeout 0 -run '^TestDST$$' -v ./dst/ -dst.seeds=$(DST_SEEDS) -dst.from=$(DST_FROM) -dst.duration=$(DST_DURATION)

dst-selftest:
	$(GO) test -count=1 -timeout 0 -run '^TestDSTSelfTest$$' -v ./dst/ -dst.selftest -dst.seeds=$(DST_SEEDS) -dst.from=$(DST_FROM) -dst.duration=$(DST_DURATION)

# Mutation testing (docs/testing.md#mutation-testing): tools/mutate finds
# each package's covering tests, runs gremlins over the decision code with
# exactly those (-short in controlloop, whose other tests start Consul),
# type-checks every mutant, runs the survivors against go test ./dst, and
# writes bench/mutate/report.md and mutants.json. The mcclient tests it
# runs start memcached (make deps).
MUTATE_FLAGS ?=
mutate: $(GREMLINS)
	cd tools/mutate && $(GO) run . -root $(CURDIR) -gremlins $(CURDIR)/$(GREMLINS) -out $(CURDIR)/bench/mutate $(MUTATE_FLAGS)

# gremlins, pinned by tools/mutate/go.mod (its own module, so that the
# product's go.mod stays small); built only when missing, like bin/consul.
$(GREMLINS):
	@mkdir -p $(dir $@)
	cd tools/mutate && $(GO) build -o ../../$(GREMLINS) github.com/go-gremlins/gremlins/cmd/gremlins

FUZZTIME ?= 30s
FUZZMINIMIZETIME ?= 1000x
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMINIMIZETIME=$(FUZZMINIMIZETIME) scripts/fuzz.sh

# The simulator's reports (docs/simulation.md): the 2-hour agent rollout of
# 500 nodes, every read simulated and then 1 read in 20 (the speed figure),
# the observer and node faults, the cold-start sweep of static boot
# limits against the adaptive one, what the slow start costs a deploy
# of every client with the caches warm, and the pool doubled (256 to 512
# slots of 1,000 nodes) warm (each split warming 15 minutes), cold and
# naively.
bench-sim: build
	$(MCRIB) sim --nodes 500 --duration 2h --scenario agent-rollout --policy immediate,mcrib --out bench/sim-rollout-500
	$(MCRIB) sim --nodes 500 --duration 2h --scenario agent-rollout --policy immediate,mcrib --sampled-reads 1000 --out bench/sim-rollout-500-sampled
	$(MCRIB) sim --nodes 100 --scenario node-failure,partition,observer-blip,packet-loss --policy immediate,mcrib --out bench/sim-faults
	$(MCRIB) sim --nodes 100 --scenario cold-start --policy immediate,adaptive,static:10,static:20,static:30,static:40,static:50,static:60,static:80,static:100,static:200 --out bench/sim-cold-start
	$(MCRIB) sim --nodes 1000 --scenario zone-drain --policy mcrib,mcrib-cold --out bench/sim-zone-drain
	$(MCRIB) sim --nodes 1000 --scenario zone-drain --policy mcrib,mcrib-cold --clients 20000 --db-capacity 24000 --warmup 4m --out bench/sim-zone-drain-busy
	$(MCRIB) sim --nodes 100 --scenario deploy --policy immediate,adaptive,static:40 --out bench/sim-deploy
	$(MCRIB) sim --nodes 1000 --scenario grow --policy mcrib,mcrib-cold,naive --warm-for 15m --out bench/sim-grow

# The fault soak on a bed of hosts (needs root): 10 minutes of seeded random
# faults and planned moves with every invariant checked after each and every
# client operation checked for stale reads across generations, without the
# race detector (make test runs 60 s of it, and each planned move once).
# SOAK_SEED replays a run.
soak: deps
	SOAK_DURATION=$${SOAK_DURATION:-10m} $(GO) test -count=1 -timeout 60m -run TestSoak -v ./e2e/

clean:
	rm -f $(MCRIB) mcrib cmd/mcrib/mcrib
	rm -f *.test *.out *.prof

distclean: clean
	rm -rf bin
