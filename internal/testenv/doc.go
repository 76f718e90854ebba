// Package testenv starts the real outside parts that mcrib's integration tests
// run against: a Consul dev server, Consul client agents on 127.0.0.x
// addresses, and memcached processes, all on free loopback ports; and
// `mcrib serve` itself (StartMcrib), or any program (StartProgram).
//
// Every process comes with one handle, Process, which each kind embeds:
// Stop (SIGTERM), Kill (kill -9), Pause (SIGSTOP), Resume (SIGCONT), Start
// and Restart with the same command line, PID, Output, and the tail of its
// output logged when the test fails. Process's start is the one place that
// launches a long-lived process for the tests.
//
// For tests across hosts, NewBed builds a test bed: a Linux bridge and one
// network namespace per host (Bed.AddHost), each with its own address in a
// /24 of 198.18.0.0/15 that no other live bed holds. StartConsulOn,
// Consul.StartClientAgentOn, StartMemcachedOn, StartMcrib and StartProgram
// run the same parts, mcrib or any program on a host; the host's
// faults (Host.Cut and Heal, Host.Blackhole, Host.Drop) and SIGSTOP of a
// process (Pause and Resume) partition them. Beds need root: without it the
// test is skipped, or failed when CI is set (see below). A bed holds an
// flock on /run/mcrib-testenv/bed-<n>.lock while it lives; NewBed removes
// the bridges, veths and namespaces of beds whose lock nobody holds, left by
// test binaries that died before their cleanups ran.
//
// For benchmarks that need more memcached nodes than processes can give,
// StartFakeMemcached serves thousands of fake nodes from the test binary.
//
// Every function takes a testing.TB and registers a t.Cleanup that kills and
// reaps every process it started, so nothing outlives the test. Each child
// runs in its own process group and is also sent SIGKILL by the kernel if the
// test binary dies (for example on a -timeout panic, when cleanups do not run).
//
// When a binary is missing, the helpers skip the test, except when the
// environment variable CI is non-empty: then they fail it, so CI cannot pass
// by skipping. The Consul binary is $MCRIB_CONSUL_BIN or <repo>/bin/consul
// (built by `make deps`); memcached, nutcracker, chromium and other programs
// are looked up in PATH, then in /usr/bin, /usr/sbin and /sbin (LookPath).
//
// Under go test -short (make check) the helpers that find or start Consul,
// memcached, nutcracker or chromium, start any process or build a test bed
// skip the test, even when CI is set: SkipShort is the one place that
// decides it, and tests that start something else or run long call it
// too.
//
// The helpers call t.Fatal and must be called from the test's own goroutine.
// The returned values are safe for concurrent use by the goroutines of one
// test, but starting and stopping the same process concurrently is not
// supported.
package testenv
