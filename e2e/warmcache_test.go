package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// fast are flags that keep the tests short: probes every 200 ms.
var fast = []string{"--probe-interval", "200ms", "--stats-interval", "200ms"}

func flags(extra ...string) []string { return append(append([]string(nil), fast...), extra...) }

// sameSlots fails the test when b puts other nodes in the slots than a.
func sameSlots(t *testing.T, what string, a, b *cachenodes.SlotMap) {
	t.Helper()
	if b == nil {
		t.Fatalf("%s: no slot map", what)
	}
	if !a.SameSlots(b) || a.Generation() != b.Generation() {
		t.Fatalf("%s: the slot map changed:\nbefore gen %d %v\nafter  gen %d %v", what, a.Generation(), a.Slots(), b.Generation(), b.Slots())
	}
}

func noFlushes(t *testing.T, p *pool, what string) {
	t.Helper()
	for id, n := range p.flushes(t) {
		if n != 0 {
			t.Errorf("%s: node %s shows cmd_flush %d, want 0", what, id, n)
		}
	}
}

// TestAgentRestartKeepsSlots is the Slack 2022 incident: the Consul client
// agents of a quarter of the serving nodes restart one after another, each
// absent longer than --hold, while their memcached never stops.
func TestAgentRestartKeepsSlots(t *testing.T) {
	const slots, nodes = 8, 9
	p := newAgentPool(t, nodes)
	server, agents := p.consul, p.agents
	m := startMcrib(t, server.HTTPAddr, flags("--slots", fmt.Sprint(slots), "--hold", "2s")...)
	before := filled(t, p, m, slots)
	items := fill(t, before, 200)

	for _, slot := range []int{1, 5} { // a quarter of the 8 serving nodes
		id := before.Slot(slot).ID
		agents[id].Stop(t)
		testenv.Eventually(t, 10*time.Second, id+" absent in mcrib's status", func() bool {
			n, ok := nodeStatus(m.status(), id)
			return ok && n.Consul == mcribapi.ConsulAbsent && n.State == mcribapi.NodeHeld && n.Reachable && n.HoldRemainingSeconds == nil
		})
		time.Sleep(3 * time.Second) // the absence must outlast --hold (2s)
		sameSlots(t, "while "+id+"'s agent is down", before, m.slotMap())
		agents[id].Start(t)
		p.register(t, id)
		testenv.Eventually(t, 10*time.Second, id+" present again", func() bool {
			n, ok := nodeStatus(m.status(), id)
			return ok && n.Consul == mcribapi.ConsulPresent && n.State == mcribapi.NodeServing
		})
	}
	sameSlots(t, "after the agent restarts", before, m.slotMap())
	sameSlots(t, "in Consul KV", before, kvSlotMap(t, server.Client, "default"))
	noFlushes(t, p, "after the agent restarts")
	if n := missing(t, before, items); n != 0 {
		t.Fatalf("%d of %d items were lost", n, len(items))
	}
}

// TestRealDeathReplacesAfterHold kills a serving memcached: after --hold its
// slot goes to a flushed spare, exactly once.
func TestRealDeathReplacesAfterHold(t *testing.T) {
	p := newPool(t, 6)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--hold", "2s")...)
	before := filled(t, p, m, 4)
	victim := before.Slot(2)
	killed := time.Now()
	p.nodes[victim.ID].Kill(t)

	var after *cachenodes.SlotMap
	testenv.Eventually(t, 20*time.Second, "slot 2 replaced", func() bool {
		after = m.slotMap()
		return after != nil && after.Slot(2).ID != victim.ID && !after.Slot(2).IsZero()
	})
	if waited := time.Since(killed); waited < 2*time.Second {
		t.Fatalf("slot 2 was replaced %s after the kill, before the 2s hold", waited)
	}
	if after.Generation() != before.Generation()+1 {
		t.Fatalf("generation %d after one replacement, want %d", after.Generation(), before.Generation()+1)
	}
	for i := range 4 {
		if i != 2 && after.Slot(i).ID != before.Slot(i).ID {
			t.Fatalf("slot %d changed from %s to %s", i, before.Slot(i).ID, after.Slot(i).ID)
		}
	}
	spare := after.Slot(2)
	if st := mustStats(t, spare.Addr); st.CmdFlush < 1 {
		t.Fatalf("the spare %s placed in slot 2 shows cmd_flush %d, want >= 1", spare.ID, st.CmdFlush)
	}
	// Exactly one replacement: nothing else moves over the next holds.
	time.Sleep(3 * time.Second)
	final := m.slotMap()
	sameSlots(t, "after the replacement settled", after, final)
	sameSlots(t, "in Consul KV", after, kvSlotMap(t, p.consul.Client, "default"))
}

// TestPausedNodeIsFlushedOnReturn pauses a serving memcached for a few
// probe intervals, shorter than --hold: it keeps its slot, and is flushed
// once before it serves again; with --flush-after-unreachable longer than
// the pause it keeps its contents.
func TestPausedNodeIsFlushedOnReturn(t *testing.T) {
	p := newPool(t, 5)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--hold", "30s")...)
	before := filled(t, p, m, 4)
	items := fill(t, before, 100)
	victim := before.Slot(1)

	pause := func() {
		t.Helper()
		p.nodes[victim.ID].Pause(t)
		testenv.Eventually(t, 10*time.Second, victim.ID+" seen unreachable", func() bool {
			n, ok := nodeStatus(m.status(), victim.ID)
			return ok && !n.Reachable
		})
		time.Sleep(600 * time.Millisecond) // a few probe intervals
		p.nodes[victim.ID].Resume(t)
		testenv.Eventually(t, 10*time.Second, victim.ID+" serving again", func() bool {
			n, ok := nodeStatus(m.status(), victim.ID)
			return ok && n.Reachable && n.State == mcribapi.NodeServing
		})
	}
	pause()
	if st := mustStats(t, victim.Addr); st.CmdFlush != 1 {
		t.Fatalf("%s shows cmd_flush %d after returning, want exactly 1", victim.ID, st.CmdFlush)
	}
	sameSlots(t, "after the pause", before, m.slotMap())
	if n := missing(t, before, items); n == 0 {
		t.Fatalf("no item was lost: the returning node was not flushed")
	}

	// With --flush-after-unreachable longer than the pause, contents stay.
	m.AddFlags("--flush-after-unreachable", "30s")
	m.restart()
	items = fill(t, before, 100)
	pause()
	if st := mustStats(t, victim.Addr); st.CmdFlush != 1 {
		t.Fatalf("%s shows cmd_flush %d after a short pause with --flush-after-unreachable 30s, want still 1", victim.ID, st.CmdFlush)
	}
	if n := missing(t, before, items); n != 0 {
		t.Fatalf("%d items lost after a short pause with --flush-after-unreachable 30s", n)
	}
	sameSlots(t, "after the second pause", before, m.slotMap())
}

// TestMassAbsenceFreezes kills half the serving memcached at once: nothing
// is replaced and the status says why.
func TestMassAbsenceFreezes(t *testing.T) {
	p := newPool(t, 6)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--hold", "1s")...)
	before := filled(t, p, m, 4)
	p.nodes[before.Slot(0).ID].Kill(t)
	p.nodes[before.Slot(3).ID].Kill(t)
	testenv.Eventually(t, 10*time.Second, "auto_frozen in /v1/status", func() bool {
		st := m.status()
		return st.AutoFrozen && strings.Contains(st.AutoFreezeReason, "absent")
	})
	time.Sleep(3 * time.Second) // three holds
	st := m.status()
	if !st.AutoFrozen {
		t.Fatalf("auto_frozen turned false while half the nodes are still dead")
	}
	sameSlots(t, "with half the serving nodes dead", before, m.slotMap())
	t.Logf("auto freeze reason: %s", st.AutoFreezeReason)
}

// TestEmptyAnswerChangesNothing deregisters every instance while memcached
// keeps running: a fault of discovery, not the death of the fleet.
func TestEmptyAnswerChangesNothing(t *testing.T) {
	p := newPool(t, 6)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--hold", "1s")...)
	before := filled(t, p, m, 4)
	for _, id := range p.ids {
		if err := p.consul.Client.Agent().ServiceDeregister(id); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 10*time.Second, "discovery_fault in /v1/status", func() bool {
		return m.status().DiscoveryFault
	})
	time.Sleep(3 * time.Second)
	sameSlots(t, "after an empty answer", before, m.slotMap())
	sameSlots(t, "in Consul KV", before, kvSlotMap(t, p.consul.Client, "default"))
	noFlushes(t, p, "after an empty answer")
}

// TestRestartOfMcribMovesNothing stops and starts mcrib: the map comes back
// from KV unchanged and nothing is flushed.
func TestRestartOfMcribMovesNothing(t *testing.T) {
	p := newPool(t, 6)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--hold", "1s")...)
	before := filled(t, p, m, 4)
	code, took := m.stop()
	if code != 0 || took > 5*time.Second {
		t.Fatalf("SIGTERM: exit %d after %s, want 0 within 5s", code, took)
	}
	m.Start(t)
	sameSlots(t, "right after the restart", before, m.slotMap())
	testenv.Eventually(t, 10*time.Second, "ready after the restart", func() bool { return m.ready() == 200 })
	time.Sleep(2 * time.Second)
	sameSlots(t, "after the restart", before, m.slotMap())
	sameSlots(t, "in Consul KV", before, kvSlotMap(t, p.consul.Client, "default"))
	noFlushes(t, p, "after the restart")
}

// TestConsulOutage stops Consul: mcrib keeps serving the map and replaces
// nothing, /readyz says so; when Consul returns empty, the same map is
// written back.
func TestConsulOutage(t *testing.T) {
	p := newPool(t, 6)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--hold", "1s")...)
	before := filled(t, p, m, 4)
	testenv.Eventually(t, 10*time.Second, "ready", func() bool { return m.ready() == 200 })
	p.consul.Stop(t)
	testenv.Eventually(t, 15*time.Second, "/readyz 503 while Consul is down", func() bool { return m.ready() == 503 })
	time.Sleep(2 * time.Second)
	sameSlots(t, "while Consul is down", before, m.slotMap())

	p.consul.Start(t)
	for _, id := range p.ids {
		p.register(t, id)
	}
	testenv.Eventually(t, 30*time.Second, "/readyz 200 after Consul returned", func() bool { return m.ready() == 200 })
	testenv.Eventually(t, 10*time.Second, "the same slot map back in KV", func() bool {
		kv := kvSlotMap(t, p.consul.Client, "default")
		return kv != nil && kv.SameSlots(before) && kv.Generation() == before.Generation()
	})
	sameSlots(t, "after the outage", before, m.slotMap())
	noFlushes(t, p, "after the outage")
}

// TestBadFlagsExit2 checks that each bad value exits 2 with one line that
// names the flag.
func TestBadFlagsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--slots", "0"}, "--slots"},
		{[]string{"--hold", "-1s"}, "--hold"},
		{[]string{"--max-absent-fraction", "1.5"}, "--max-absent-fraction"},
		{[]string{"--hit-rate-low", "0.95", "--hit-rate-target", "0.90"}, "--hit-rate-low"},
		{[]string{"--token-file", "/nonexistent/token"}, "--token-file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runMcrib(t, nil, append([]string{"serve"}, tc.args...)...)
			out := stdout + stderr
			if code != 2 {
				t.Fatalf("exit %d, want 2; output %q", code, out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.flag) {
				t.Fatalf("output %q: want one line naming %s", out, tc.flag)
			}
		})
	}
}

// TestSlotCountIsFixed refuses --slots different from the stored map's.
func TestSlotCountIsFixed(t *testing.T) {
	p := newPool(t, 4)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4")...)
	filled(t, p, m, 4)
	code, stdout, stderr := runMcrib(t, nil, "serve", "--consul", p.consul.HTTPAddr, "--slots", "8", "--listen", fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)))
	out := stdout + stderr
	if code != 2 || !strings.Contains(out, "--slots") {
		t.Fatalf("mcrib serve --slots 8 on a 4-slot pool: exit %d %q, want exit 2 naming --slots", code, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 {
		t.Fatalf("want one line, got %q", out)
	}
}

// TestStopWhileConsulDown: SIGTERM ends mcrib within 5 s even when Consul
// cannot be reached to release the lock.
func TestStopWhileConsulDown(t *testing.T) {
	p := newPool(t, 2)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "2")...)
	filled(t, p, m, 2)
	p.consul.Stop(t)
	testenv.Eventually(t, 15*time.Second, "/readyz 503 while Consul is down", func() bool { return m.ready() == 503 })
	code, took := m.stop()
	if code != 0 || took > 5*time.Second {
		t.Fatalf("SIGTERM with Consul down: exit %d after %s, want 0 within 5s", code, took)
	}
}
