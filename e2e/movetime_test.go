package e2e

import (
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestMoveTime measures the time a move takes from its decision to
// serving (docs/performance.md, "Announce, then serve"), on Consul and
// memcached: an operator's replace of a slot holder that answers, from
// the request until the slot map served names the new holder (its
// announce adds 12 s), and, at the same time, the replacement of a holder
// killed, under --hold 15s, from the kill (its announce comes 12 s before
// the hold ends: it adds nothing but the time to see the node gone).
func TestMoveTime(t *testing.T) {
	const hold = 15 * time.Second
	p := newPool(t, 8)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", "4", "--hold", hold.String(), "--warm-for", "0s")...)...)
	before := filled(t, p, m, 4)
	api := newAPIClient(m.Addr, apiTimeout)
	dead, moved := before.Slot(2), before.Slot(1)

	killed := time.Now()
	p.nodes[dead.ID].Kill(t)
	asked := time.Now()
	code, body := api.do("POST", "/v1/nodes/"+moved.ID+"/replace", `{"reason":"move time"}`, token)
	if code != 200 {
		t.Fatalf("POST /v1/nodes/%s/replace: %d %s", moved.ID, code, body)
	}
	ans, err := decodeAs[mcribapi.ReplaceAnswer](body, "the replace")
	if err != nil {
		t.Fatal(err)
	}
	var replaced, holdReplaced time.Time
	deadline := time.Now().Add(hold + 30*time.Second)
	for (replaced.IsZero() || holdReplaced.IsZero()) && time.Now().Before(deadline) {
		sm, _, err := api.slotMap("")
		if err == nil {
			if replaced.IsZero() && sm.Slot(1).ID != moved.ID {
				replaced = time.Now()
			}
			if holdReplaced.IsZero() && sm.Slot(2).ID != dead.ID && !sm.Slot(2).IsZero() {
				holdReplaced = time.Now()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if replaced.IsZero() || holdReplaced.IsZero() {
		t.Fatalf("not served within %v: replace %v, replacement %v", hold+30*time.Second, !replaced.IsZero(), !holdReplaced.IsZero())
	}
	took, afterKill := replaced.Sub(asked), holdReplaced.Sub(killed)
	t.Logf("move time: a replace serves %v after its request (serves_at %v after it); a holder killed is replaced %v after the kill under --hold %v (%v past the hold)",
		took.Round(10*time.Millisecond), ans.ServesAt.Sub(asked).Round(10*time.Millisecond), afterKill.Round(10*time.Millisecond), hold, (afterKill - hold).Round(10*time.Millisecond))
	if took < cachenodes.AnnounceLead-time.Second || took > cachenodes.AnnounceLead+5*time.Second {
		t.Errorf("a replace served %v after its request; want its announce's 12 s (to 17 s)", took)
	}
	if afterKill < hold || afterKill > hold+10*time.Second {
		t.Errorf("a killed holder replaced %v after the kill; want within 10 s past --hold %v (its announce comes before the hold ends)", afterKill, hold)
	}
}
