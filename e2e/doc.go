// Package e2e holds mcrib's end-to-end tests: the mcrib binary, built once
// per test run, against a real Consul agent and real memcached processes on
// loopback, or on a bed of hosts. Each test starts its own Consul, memcached
// and mcrib servers, every one through internal/testenv (mcrib serve through
// testenv.StartMcrib, by startMcrib or newHostsPool), and stops every one of
// them; the CLI's commands, which exit by themselves, run the binary
// through runMcrib, and the make run test runs make under a terminal of
// its own (runlocal_test.go). The harness is one of each: one pool builder on loopback (buildPool,
// pool_test.go) beside the bed's (newHostsPool), one client of the API
// (apiClient, api_test.go), one load generator (cacheLoad, load_test.go).
// Every document the tests read is decoded into the types of package
// mcribapi (the slot map with cachenodes.ParseSlotMap), as mcrib itself
// reads them (documents_test.go).
package e2e
