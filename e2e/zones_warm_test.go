package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// cacheAside reads key through c as a cache-aside application does: a hit
// is served from the cache; on a miss the value is read from the
// "database" (counted by the caller) and set. It reports whether it hit.
func cacheAside(t *testing.T, c *mcclient.Client, key string) bool {
	t.Helper()
	_, err := c.Get(key)
	switch {
	case err == nil:
		return true
	case errors.Is(err, memcache.ErrCacheMiss):
		if err := c.Set(&memcache.Item{Key: key, Value: []byte("db:" + key)}); err != nil {
			t.Errorf("set %s after a miss: %v", key, err)
		}
		return false
	default:
		t.Errorf("get %s: %v", key, err)
		return false
	}
}

// hitRate reads every key of keys once, cache-aside, and returns the
// fraction that hit.
func hitRate(t *testing.T, c *mcclient.Client, keys []string) float64 {
	t.Helper()
	hits := 0
	for _, k := range keys {
		if cacheAside(t, c, k) {
			hits++
		}
	}
	return float64(hits) / float64(len(keys))
}

// TestWarmReplace is a warm replace with a cache-aside load through
// the Go client: POST /v1/nodes/{id}/replace of a slot holder answers warm
// true and the slot map names the old holder as the slot's warm source
// until --warm-for passes; the hit rate on the slot's keys stays within 10
// points of what it was (the client reads the new holder, then the old
// one, and fills the new one); a key deleted during the warming never
// comes back, through the client or from the old holder; after --warm-for
// the old holder is a spare and the slot warms no more. Bad replace input
// is refused and changes nothing; mcrib replace moves a slot too.
func TestWarmReplace(t *testing.T) {
	const slots, slot = 4, 1
	const warmFor = 6 * time.Second
	p := newZonedPool(t, []string{"a", "b", "c"}, 2)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", fmt.Sprint(slots), "--hold", "60s",
		"--warm-for", warmFor.String())...)...)
	filled(t, p, m, slots)
	api := newAPIClient(m.Addr, apiTimeout)
	before, _, err := api.slotMap("")
	if err != nil {
		t.Fatal(err)
	}
	victim := before.Slot(slot)
	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URL: "http://" + m.Addr, WaitTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := followingClient(t, f, clientTimeout)
	testenv.Eventually(t, 10*time.Second, "the client follows the map", func() bool {
		n, ok := c.NodeFor(slotKeys("probe", slot, slots, 1)[0])
		return ok && n.ID == victim.ID
	})

	// The load: keys of the victim's slot, read cache-aside until warm.
	keys := slotKeys("warm", slot, slots, 300)
	hitRate(t, c, keys)
	was := hitRate(t, c, keys)
	t.Logf("hit rate on slot %d's keys before the replace: %s", slot, pct(was))

	// Bad input: refused, nothing moved.
	if before.NumSpares() == 0 {
		t.Fatalf("no spare in %s", describeMap(before))
	}
	for _, tc := range []struct {
		name, path, body, tok string
		want                  int
	}{
		{"unknown node", "/v1/nodes/nope/replace", `{"reason":"x"}`, token, 404},
		{"a spare", "/v1/nodes/" + before.Spare(0).ID + "/replace", `{"reason":"x"}`, token, 409},
		{"missing reason", "/v1/nodes/" + victim.ID + "/replace", `{}`, token, 400},
		{"empty reason", "/v1/nodes/" + victim.ID + "/replace", `{"reason":""}`, token, 400},
		{"reason of 513 characters", "/v1/nodes/" + victim.ID + "/replace", `{"reason":"` + strings.Repeat("r", 513) + `"}`, token, 400},
		{"no token", "/v1/nodes/" + victim.ID + "/replace", `{"reason":"x"}`, "", 401},
	} {
		code, body := api.do("POST", tc.path, tc.body, tc.tok)
		if code != tc.want || !isErrorBody(body) {
			t.Errorf("replace, %s: POST %s: %d %s, want %d with {\"error\": \"<one sentence>\"}", tc.name, tc.path, code, body, tc.want)
		}
		if now, _, err := api.slotMap(""); err != nil || now.Generation() != before.Generation() || len(warmingSlots(now)) > 0 {
			t.Fatalf("replace, %s, changed the slot map: %s (%v)", tc.name, describeMap(now), err)
		}
	}
	tok := []string{"MCRIB_TOKEN=" + token}
	for _, args := range [][]string{{"replace"}, {"replace", victim.ID}} {
		if code, out, errOut := runCLI(t, m.Addr, tok, args...); code != 2 {
			t.Errorf("mcrib %s: exit %d, stdout %q, stderr %q; want 2 (usage)", strings.Join(args, " "), code, short(out), short(errOut))
		}
	}
	if code, out, errOut := runCLI(t, m.Addr, tok, "replace", "nope", "--reason", "x"); code != 1 || strings.TrimSpace(errOut) == "" {
		t.Errorf("mcrib replace nope --reason x: exit %d, stdout %q, stderr %q; want 1 with the server's message", code, short(out), short(errOut))
	}

	// The warm replace.
	asked := time.Now()
	code, body := api.do("POST", "/v1/nodes/"+victim.ID+"/replace", `{"reason":"warm replace test"}`, token)
	if code != 200 {
		t.Fatalf("POST /v1/nodes/%s/replace: %d %s", victim.ID, code, body)
	}
	ans, err := decodeAs[mcribapi.ReplaceAnswer](body, "the replace")
	if err != nil {
		t.Fatal(err)
	}
	if ans.Slot != slot || ans.From != victim.ID || ans.To == "" || ans.To == victim.ID || !ans.Warm {
		t.Fatalf("the replace answered %s; want {\"slot\": %d, \"from\": %q, \"to\": <a spare>, \"warm\": true}", body, slot, victim.ID)
	}
	// Announced: the spare is flushed and the slot's incoming node; it
	// serves 12 s later.
	if lo, hi := asked.Add(cachenodes.AnnounceLead-time.Second), time.Now().Add(cachenodes.AnnounceLead+time.Second); ans.ServesAt.Before(lo) || ans.ServesAt.After(hi) {
		t.Errorf("the replace's serves_at %v; want 12 s after it, between %v and %v", ans.ServesAt, lo, hi)
	}
	announced, _, err := api.slotMap("")
	if err != nil {
		t.Fatal(err)
	}
	if ni := announced.Incoming(slot); ni == nil || ni.NodeID != ans.To || announced.Slot(slot).ID != victim.ID || announced.Generation() != before.Generation() {
		t.Fatalf("slot %d after the replace: %s, incoming %+v; want %s still holding it, %s announced", slot, describeMap(announced), ni, victim.ID, ans.To)
	}
	if st, err := api.status(); err != nil {
		t.Fatal(err)
	} else if n, _ := nodeStatus(st, ans.To); n.State != mcribapi.NodeIncoming || n.Incoming == nil || *n.Incoming != slot {
		t.Errorf("the incoming node in the status: %+v; want state incoming to slot %d", n, slot)
	}
	var after *cachenodes.SlotMap
	testenv.Eventually(t, cachenodes.AnnounceLead+5*time.Second, "the replace served", func() bool {
		sm, _, err := api.slotMap("")
		after = sm
		return err == nil && sm.Slot(slot).ID == ans.To
	})
	if served := time.Since(asked); served < cachenodes.AnnounceLead-time.Second {
		t.Errorf("the replace served %v after it was asked, before its 12 s announce", served)
	}
	s, wm := after.Slot(slot), after.Warming(slot)
	if s.ID != ans.To || wm == nil || wm.NodeID != victim.ID || wm.Addr != victim.Addr {
		t.Fatalf("slot %d after the replace: %+v (warming %+v); want %s holding it, warming from %s at %s", slot, s, wm, ans.To, victim.ID, victim.Addr)
	}
	if !wm.Until.Equal(ans.ServesAt.Add(warmFor)) {
		t.Errorf("warming until %v; want --warm-for (%v) after the move's serves_at %v", wm.Until, warmFor, ans.ServesAt)
	}
	if after.Generation() != before.Generation()+1 {
		t.Errorf("generation %d → %d after one replace, want one more", before.Generation(), after.Generation())
	}
	if st, err := api.status(); err != nil {
		t.Fatal(err)
	} else if n, _ := nodeStatus(st, victim.ID); n.State != mcribapi.NodeWarming || n.Warming == nil || *n.Warming != slot || n.Slot != nil {
		t.Errorf("the old holder in the status: %+v (warming %v, slot %v); want state warming, warming %d, no slot", n, n.Warming, n.Slot, slot)
	}
	newAddr := s.Addr
	if warm, ok := api.moves("warm"); !ok || warm != 1 {
		t.Errorf("mcrib_slot_moves_total{kind=\"warm\"} %v (listed %v) after one warm replace, want 1", warm, ok)
	}

	testenv.Eventually(t, 5*time.Second, "the client routes slot 1 to "+ans.To, func() bool {
		n, ok := c.NodeFor(keys[0])
		return ok && n.ID == ans.To
	})
	gone := keys[0]
	if err := c.Delete(gone); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("delete %s during the warming: %v", gone, err)
	}
	during := hitRate(t, c, keys[1:])
	if left := time.Until(wm.Until); left < 0 {
		t.Fatalf("the pass over %d keys outlasted the warming (%v): raise --warm-for", len(keys)-1, warmFor)
	}
	t.Logf("hit rate on slot %d's keys during the warming: %s (before: %s)", slot, pct(during), pct(was))
	if during < was-0.10 {
		t.Errorf("hit rate on slot %d's keys during the warming %s, before %s: a warm move must keep it within a few points (here 10)", slot, pct(during), pct(was))
	}
	if !within(2*time.Second, func() bool { _, err := directGet(newAddr, keys[1]); return err == nil }) {
		t.Errorf("%s, read through the client during the warming, is not on the new holder %s: the client fills it from the old one", keys[1], ans.To)
	}
	if code, body := api.do("POST", "/v1/nodes/"+victim.ID+"/replace", `{"reason":"again"}`, token); code != 409 || !isErrorBody(body) {
		t.Errorf("replace of the warming old holder %s (it holds no slot): %d %s, want 409 with {\"error\": …}", victim.ID, code, body)
	}
	staleCheck := func(when string) {
		t.Helper()
		if _, err := c.Get(gone); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Errorf("%s: get %s, deleted during the warming, answered %v; want a miss", when, gone, err)
		}
		if _, err := directGet(victim.Addr, gone); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Errorf("%s: the old holder %s still has %s, deleted during the warming (%v): deletes go to both", when, victim.ID, gone, err)
		}
		// The delete left its tombstone in the new holder (15 s), or nothing.
		if it, err := directGet(newAddr, gone); !errors.Is(err, memcache.ErrCacheMiss) && (err != nil || !cachenodes.IsTombstone(it)) {
			t.Errorf("%s: the new holder %s has %s, deleted during the warming (%v)", when, ans.To, gone, err)
		}
	}
	staleCheck("during the warming")

	// After --warm-for, and the 12 s its object stays for the writes: the
	// old holder is a spare, the slot warms no more.
	testenv.Eventually(t, warmFor+cachenodes.WarmWriteGrace+10*time.Second, "the warming over: "+victim.ID+" a spare", func() bool {
		sm, _, err := api.slotMap("")
		if err != nil || sm.Warming(slot) != nil || !isSpare(sm, victim.ID) {
			return false
		}
		st, err := api.status()
		n, _ := nodeStatus(st, victim.ID)
		return err == nil && n.State == mcribapi.NodeSpare && n.Warming == nil
	})
	if ended := time.Since(asked); ended < cachenodes.AnnounceLead+warmFor+cachenodes.WarmWriteGrace-time.Second {
		t.Errorf("the warming object went %v after the replace, before its announce, --warm-for %v and 12 s", ended, warmFor)
	}
	staleCheck("after the warming")
	final := hitRate(t, c, keys[1:])
	t.Logf("hit rate on slot %d's keys after the warming: %s", slot, pct(final))
	if final < was-0.10 {
		t.Errorf("hit rate on slot %d's keys after the warming %s, before %s: the new holder was not filled", slot, pct(final), pct(was))
	}

	// mcrib replace: the same through the CLI.
	other := after.Slot(0)
	code, out, errOut := runCLI(t, m.Addr, tok, "replace", other.ID, "--reason", "x")
	if code != 0 || !strings.Contains(out, other.ID) {
		t.Fatalf("mcrib replace %s --reason x: exit %d, stdout %q, stderr %q; want 0 naming the node", other.ID, code, short(out), short(errOut))
	}
	if !strings.Contains(out, "announced:") {
		t.Errorf("mcrib replace %s printed %q; want the announce and when it serves", other.ID, out)
	}
	testenv.Eventually(t, cachenodes.AnnounceLead+5*time.Second, "mcrib replace "+other.ID+" served", func() bool {
		sm, _, err := api.slotMap("")
		return err == nil && sm.Slot(0).ID != other.ID && sm.Warming(0) != nil && sm.Warming(0).NodeID == other.ID
	})
}
