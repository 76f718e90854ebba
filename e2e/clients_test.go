package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// slotMapAnswer is one answer of GET /v1/slotmap.
type slotMapAnswer struct {
	status int
	index  string
	m      *cachenodes.SlotMap
	took   time.Duration
	err    error
}

// getSlotMap GETs /v1/slotmap with query (no "?").
func (m *mcrib) getSlotMap(query string) slotMapAnswer {
	an := m.api.send("GET", "/v1/slotmap?"+query, "", "")
	a := slotMapAnswer{status: an.code, index: an.header.Get(mcribapi.IndexHeader), took: an.took, err: an.err}
	if an.err == nil && an.code == http.StatusOK {
		a.m, a.err = cachenodes.ParseSlotMap(an.body)
	}
	return a
}

// goGetSlotMap runs getSlotMap in the background.
func (m *mcrib) goGetSlotMap(query string) <-chan slotMapAnswer {
	ch := make(chan slotMapAnswer, 1)
	go func() { ch <- m.getSlotMap(query) }()
	return ch
}

// placedThroughNutcracker writes n keys through nutcracker and checks that
// each is found on exactly the memcached that the selector of sm names.
func placedThroughNutcracker(t *testing.T, p *pool, nut *testenv.Nutcracker, sm *cachenodes.SlotMap, prefix string, n int) {
	t.Helper()
	sel, err := cachenodes.NewSelector(sm)
	if err != nil {
		t.Fatal(err)
	}
	c := memcache.New(nut.Addr)
	c.Timeout = 2 * time.Second
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s:%d", prefix, i)
		if err := c.Set(&memcache.Item{Key: keys[i], Value: []byte("v")}); err != nil {
			t.Fatalf("set %s through nutcracker: %v", keys[i], err)
		}
	}
	for id, node := range p.nodes {
		if sm.SlotOf(id) < 0 {
			continue // a spare, or the dead node
		}
		found, err := memcache.New(node.Addr).GetMulti(keys)
		if err != nil {
			t.Fatalf("reading %s directly: %v", id, err)
		}
		for _, k := range keys {
			a, _ := sel.PickServer(k)
			if _, got := found[k]; got != (a.String() == node.Addr) {
				t.Fatalf("key %s on %s (slot %d): %v; the selector names %s", k, id, sm.SlotOf(id), got, a)
			}
		}
	}
}

// TestClientsFollowTheMap runs mcrib with a twemproxy config and real
// nutcracker, and follows the map with blocking reads: keys written
// through nutcracker land where the selector says; a blocking read holds
// past the server's 10 s write timeout when nothing changes, answers
// within a moment of a replacement, and answers at once on shutdown; the
// twemproxy config follows the replacement, and a restarted nutcracker
// routes by it.
func TestClientsFollowTheMap(t *testing.T) {
	testenv.NutcrackerBinary(t)
	const slots = 8
	p := newPool(t, slots+1)
	dir := t.TempDir()
	nutConf := filepath.Join(dir, "nutcracker.yml")
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t)))
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", strconv.Itoa(slots), "--hold", "1s",
		"--twemproxy-config", nutConf, "--twemproxy-listen", listen)...)
	before := filled(t, p, m, slots)

	first := m.getSlotMap("")
	if first.err != nil || first.status != 200 || first.index == "" || !first.m.Equal(before) {
		t.Fatalf("GET /v1/slotmap: %d index %q err %v", first.status, first.index, first.err)
	}
	// Nothing changes for 12 s: a blocked read outlives the server's
	// 10 s timeouts and answers the same document and index.
	long := m.goGetSlotMap("index=" + first.index + "&wait=12s")

	want, err := controlloop.TwemproxyConfig(before, listen)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the twemproxy config written", func() bool {
		got, err := os.ReadFile(nutConf)
		return err == nil && string(got) == string(want)
	})
	nut := testenv.StartNutcracker(t, nutConf, listen)
	placedThroughNutcracker(t, p, nut, before, "before", 200)

	a := <-long
	if a.err != nil || a.status != 200 || a.index != first.index || !a.m.Equal(before) {
		t.Fatalf("blocked read without a change: %d index %q (want %q) err %v", a.status, a.index, first.index, a.err)
	}
	if a.took < 12*time.Second || a.took > 14*time.Second {
		t.Fatalf("blocked read with wait=12s answered after %s", a.took)
	}

	// A replacement: the blocked read answers soon after each write of the
	// map, first the announce (the same generation, a new revision, the
	// replacement as slot 3's incoming node), then the move.
	blocked := m.goGetSlotMap("index=" + first.index + "&wait=60s")
	victim := before.Slot(3)
	p.nodes[victim.ID].Kill(t)
	var announced *cachenodes.SlotMap
	testenv.Eventually(t, 20*time.Second, "slot 3's replacement announced", func() bool {
		announced = kvSlotMap(t, p.consul.Client, "default")
		return announced != nil && announced.Incoming(3) != nil
	})
	a = answerSoon(t, blocked, "the announce")
	if a.err != nil || a.status != 200 || a.index == first.index || a.m.Generation() != before.Generation() ||
		a.m.Revision() <= before.Revision() || a.m.Incoming(3) == nil || a.m.Incoming(3).NodeID != announced.Incoming(3).NodeID {
		t.Fatalf("blocked read across the announce: %d index %q err %v, map %v", a.status, a.index, a.err, a.m)
	}
	blocked = m.goGetSlotMap("index=" + a.index + "&wait=60s")
	var after *cachenodes.SlotMap
	testenv.Eventually(t, 20*time.Second, "slot 3 replaced", func() bool {
		after = kvSlotMap(t, p.consul.Client, "default")
		return after != nil && after.Slot(3).ID != victim.ID && !after.Slot(3).IsZero()
	})
	a = answerSoon(t, blocked, "the replacement")
	if a.err != nil || a.status != 200 || a.m.Generation() != before.Generation()+1 ||
		a.m.Slot(3).ID != announced.Incoming(3).NodeID || a.m.Incoming(3) != nil {
		t.Fatalf("blocked read across a replacement: %d index %q err %v, map %v", a.status, a.index, a.err, a.m)
	}

	// The twemproxy config follows; nutcracker has no reload: restart it.
	want, err = controlloop.TwemproxyConfig(a.m, listen)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the twemproxy config rewritten", func() bool {
		got, err := os.ReadFile(nutConf)
		return err == nil && string(got) == string(want)
	})
	nut.Restart(t)
	placedThroughNutcracker(t, p, nut, a.m, "after", 200)

	// Shutdown answers a blocked read at once.
	last := m.goGetSlotMap("index=" + a.index + "&wait=5m")
	time.Sleep(200 * time.Millisecond) // let the read block
	if code, took := m.stop(); code != 0 || took > 5*time.Second {
		t.Fatalf("mcrib stopped with %d after %s", code, took)
	}
	select {
	case a = <-last:
		if a.err != nil || a.status != 200 || a.m == nil {
			t.Fatalf("blocked read at shutdown: %d err %v", a.status, a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked read did not answer at shutdown")
	}
}

// answerSoon returns the answer of a blocked read that must come within
// 3 s of the write the caller has just seen stored.
func answerSoon(t *testing.T, blocked <-chan slotMapAnswer, what string) slotMapAnswer {
	t.Helper()
	seen := time.Now()
	select {
	case a := <-blocked:
		if lag := time.Since(seen); lag > 3*time.Second {
			t.Errorf("the blocked read answered %s after %s was stored", lag, what)
		}
		return a
	case <-time.After(10 * time.Second):
		t.Fatalf("the blocked read did not answer after %s", what)
		return slotMapAnswer{}
	}
}
