// Package e2e holds mcrib's end-to-end tests: the mcrib binary, built once
// per test run, against a real Consul agent and real memcached processes on
// loopback. Each test starts its own Consul and memcached (internal/testenv)
// and its own mcrib processes, and stops every one of them. Every document
// the tests read is decoded into the types of package mcribapi (the slot
// map with cachenodes.ParseSlotMap), as mcrib itself reads them
// (documents_test.go).
package e2e
