package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/staleread"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
)

// TestSoakCatchesAPlantedClientFault holds the soak's recorder and the
// check across generations to a client fault planted on the real stack
// (Consul, memcached, mcrib serve): a client that stopped following the
// slot map after its first one, yet says its map is fresh, sets and
// deletes 100 keys while an honest client, following mcrib over HTTP,
// reads them, and a slot holder is replaced (a warm move: generation + 1).
// The planted client goes on writing the old holder only; the honest one
// reads the new holder, which holds what it copied from the old holder
// earlier: stale reads across the two generations, every one a value the
// planted client's own later set or delete had replaced. Judged as the
// planted client truly is (its map not fresh: it never read it again),
// the same history has no violation: a stale writer replaces nothing.
func TestSoakCatchesAPlantedClientFault(t *testing.T) {
	p := newPool(t, 4)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "2", "--warm-for", "4s")...)
	before := filled(t, p, m, 2)

	frozen, err := mcclient.New(mcclient.Options{Timeout: clientTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if err := frozen.SetSlotMap(before); err != nil {
		t.Fatal(err)
	}
	planted := &soakApp{name: "planted", via: "its first map only, said to be fresh", c: frozen,
		fresh: func(*mcclient.Client) bool { return true }, getPct: 0, setPct: 70}
	clients, stop := startSoakClients(t, soakClientsOptions{replicas: []*replica{{mcrib: m, name: "mcrib"}},
		http: 1, keys: 100, seed: 26, readOnly: true, keep: true, extra: []*soakApp{planted}})
	defer stop()
	opsAt := func() int { clients.mu.Lock(); defer clients.mu.Unlock(); return clients.ops }
	testenv.Eventually(t, 20*time.Second, "2,000 operations before the move", func() bool { return opsAt() >= 2000 })

	from := before.Slot(0)
	if code, body, _ := m.call("POST", "/v1/nodes/"+from.ID+"/replace", `{"reason":"a planted client fault"}`, ""); code != 200 {
		t.Fatalf("POST /v1/nodes/%s/replace: %d %s", from.ID, code, body)
	}
	testenv.Eventually(t, 60*time.Second, "slot 0 moved and its warming over and removed", func() bool {
		sm := m.slotMap()
		return sm != nil && sm.Slot(0).ID != from.ID && sm.Warming(0) == nil
	})
	honest := clients.apps[0]
	moved := m.slotMap().Generation()
	testenv.Eventually(t, 20*time.Second, "the honest client on the new map", func() bool { return generation(honest.client().SlotMap()) >= moved })
	more := opsAt() + 2000
	testenv.Eventually(t, 20*time.Second, "2,000 operations after the move", func() bool { return opsAt() >= more })

	found := stop()
	for _, line := range clients.summary() {
		t.Log(line)
	}
	stale := 0
	for _, v := range found {
		if !strings.HasPrefix(v, "stale read: c1's get") || !strings.Contains(v, "which planted's") {
			t.Errorf("a violation that is not the planted client's: %s", v)
			continue
		}
		stale++
	}
	if stale == 0 {
		t.Fatalf("no stale read found: the planted client's writes to the old holder went unseen (%d operations)", opsAt())
	}
	t.Logf("%d stale reads found, the first: %s", stale, found[0])

	truly := staleread.New(staleread.Options{})
	for _, o := range clients.kept {
		c := *o
		if c.Client == planted.name {
			c.Fresh = false
		}
		truly.Add(&c)
	}
	if got := truly.Check(); len(got) != 0 {
		t.Errorf("judged with the planted client's map not fresh: %d violations, want none; the first: %v", len(got), got[0])
	}
}
