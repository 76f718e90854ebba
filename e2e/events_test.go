package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestEventsAfterAgentRestart restarts the Consul client agent of a
// serving node for longer than --hold while its memcached keeps running:
// GET /v1/events lists the hold started and cleared for that node, and
// neither a flush nor a replacement after the first fill.
func TestEventsAfterAgentRestart(t *testing.T) {
	const slots, nodes = 4, 5
	p := newAgentPool(t, nodes)
	server, agents := p.consul, p.agents
	m := startMcrib(t, server.HTTPAddr, flags("--slots", fmt.Sprint(slots), "--hold", "2s")...)
	before := filled(t, p, m, slots)
	id := before.Slot(1).ID

	agents[id].Stop(t)
	testenv.Eventually(t, 10*time.Second, id+" held", func() bool {
		n, ok := nodeStatus(m.status(), id)
		return ok && n.State == mcribapi.NodeHeld
	})
	time.Sleep(3 * time.Second) // longer than --hold
	agents[id].Start(t)
	p.register(t, id)

	var evs []mcribapi.Event
	testenv.Eventually(t, 10*time.Second, "the hold of "+id+" cleared in /v1/events", func() bool {
		var err error
		if evs, err = m.api.events(); err != nil {
			return false
		}
		for _, e := range evs {
			if e.Kind == mcribapi.EventHoldCleared && e.Node == id {
				return true
			}
		}
		return false
	})
	started := false
	for _, e := range evs {
		switch {
		case e.Kind == mcribapi.EventHoldStarted && e.Node == id:
			started = e.Reason != "" && !e.At.IsZero()
		case e.Kind == mcribapi.EventFlush, e.Kind == mcribapi.EventReplacement:
			t.Errorf("an agent restart led to %s of %s: %q", e.Kind, e.Node, e.Reason)
		}
	}
	if !started {
		t.Errorf("/v1/events lacks the hold of %s with a time and reason: %+v", id, evs)
	}
	sameSlots(t, "after the agent restart", before, m.slotMap())
	noFlushes(t, p, "after the agent restart")
}
