package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// restarter restarts the real memcached of a pool when the roll's
// command asks it to: `mcrib roll --exec` runs `curl` against it with the
// node's address, and it kills that memcached (SIGKILL) and starts it
// again, empty, with a new pid.
type restarter struct {
	t     *testing.T
	p     *pool
	mu    sync.Mutex
	order []string
	// refuse lists the nodes whose memcached is killed and not started
	// again (a node that does not come back).
	refuse map[string]bool
	srv    *httptest.Server
}

func newRestarter(t *testing.T, p *pool) *restarter {
	r := &restarter{t: t, p: p, refuse: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *restarter) serve(w http.ResponseWriter, req *http.Request) {
	addr, id := req.URL.Query().Get("addr"), req.URL.Query().Get("id")
	var node *testenv.Memcached
	for nid, n := range r.p.nodes {
		if n.Addr == addr && nid == id {
			node = n
		}
	}
	if node == nil {
		http.Error(w, "no memcached "+id+" at "+addr, http.StatusNotFound)
		return
	}
	r.mu.Lock()
	r.order = append(r.order, id)
	refuse := r.refuse[id]
	r.mu.Unlock()
	node.Kill(r.t)
	if refuse {
		fmt.Fprintf(w, "killed %s, not started again\n", id)
		return
	}
	node.Start(r.t)
	fmt.Fprintf(w, "restarted %s at %s: pid %d\n", id, addr, node.PID())
}

// command is the --exec command that restarts the released node.
func (r *restarter) command() string {
	return fmt.Sprintf(`curl -fsS "%s/restart?id=$MCRIB_NODE_ID&addr=$MCRIB_NODE_ADDR" && echo "zone $MCRIB_NODE_AZ"`, r.srv.URL)
}

func (r *restarter) restarted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.order...)
}

// rollCLI runs `mcrib roll` with args against addr until it exits (at most
// limit), and returns its exit code and output.
func rollCLI(t *testing.T, addr string, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	code, out, err := runRollCLI(ctx, mcribBinary(t), addr, args...)
	if err != nil {
		t.Fatalf("running mcrib roll: %v\n%s", err, out)
	}
	return code, out
}

// runRollCLI runs `mcrib roll` (the binary bin) with args against addr
// until it exits or ctx ends, and returns its exit code and output; an
// error when it could not run.
func runRollCLI(ctx context.Context, bin, addr string, args ...string) (int, string, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"roll"}, args...)...)
	cmd.Env = append(os.Environ(), "MCRIB_ADDR=http://"+addr, "MCRIB_TOKEN="+token)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), nil
	}
	return 0, out.String(), err
}

// TestRollEveryNodeWithExec rolls every node of a small pool on real
// Consul and memcached with `mcrib roll --all --exec`, the command killing
// and starting each real memcached again: the spares first, then each
// holder once its slot moved warm to a spare (the leader's copy carries
// its keys) and its warming object was removed; each restart is seen (a
// new pid), every slot moves once, and no key set before the roll misses
// after it.
func TestRollEveryNodeWithExec(t *testing.T) {
	const slots = 2
	p := newZonedPool(t, []string{"a", "b"}, 2)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", fmt.Sprint(slots), "--hold", "60s",
		"--warm-for", "30s", "--warm-min", "2s")...)...)
	before := filled(t, p, m, slots)
	pids := map[string]int64{}
	for id, n := range p.nodes {
		pids[id] = mustStats(t, n.Addr).PID
	}
	// Keys in each slot, set at its holder: the roll must keep them.
	var keys []string
	for s := range slots {
		ks := slotKeys("roll", s, slots, 50)
		c := memcache.New(before.Slot(s).Addr)
		for _, k := range ks {
			if err := c.Set(&memcache.Item{Key: k, Value: []byte("v-" + k)}); err != nil {
				t.Fatalf("set %s: %v", k, err)
			}
		}
		keys = append(keys, ks...)
	}
	r := newRestarter(t, p)
	code, out := rollCLI(t, m.Addr, 4*time.Minute, "--all", "--reason", "memcached 1.6.38", "--restart-timeout", "1m", "--exec", r.command())
	if code != 0 {
		t.Fatalf("mcrib roll --all --exec: exit %d\n%s", code, out)
	}
	for id := range p.nodes {
		if strings.Count(out, "running for "+id+" ") != 1 || !strings.Contains(out, "restarted "+id+" at") {
			t.Errorf("the command ran for %s other than once:\n%s", id, out)
		}
	}
	if !strings.Contains(out, "zone a") || !strings.Contains(out, "roll done") {
		t.Errorf("output:\n%s", out)
	}
	// Spares first, then the holders, each by ID.
	order := r.restarted()
	var spares, held []string
	for _, id := range p.ids {
		if before.SlotOf(id) >= 0 {
			held = append(held, id)
		} else {
			spares = append(spares, id)
		}
	}
	if want := append(spares, held...); fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("restarted in the order %v, want %v", order, want)
	}
	for id, n := range p.nodes {
		if st := mustStats(t, n.Addr); st.PID == pids[id] {
			t.Errorf("node %s still runs pid %d", id, st.PID)
		}
	}
	code, body, _ := m.call("GET", "/v1/roll", "", "")
	doc, err := decodeAs[mcribapi.RollDoc](body, "GET /v1/roll")
	if code != 200 || err != nil || doc.Roll == nil || doc.Roll.State != mcribapi.RollDone || doc.Roll.Count(mcribapi.RollRestarted) != len(p.nodes) {
		t.Fatalf("GET /v1/roll: %d %s (%v)", code, body, err)
	}
	after := m.slotMap()
	if after.Generation() != before.Generation()+slots {
		t.Errorf("generation %d after the roll, was %d: each of the %d slots moves once", after.Generation(), before.Generation(), slots)
	}
	for s := range slots {
		if after.Slot(s).ID == before.Slot(s).ID {
			t.Errorf("slot %d still on %s", s, after.Slot(s).ID)
		}
	}
	// Every key set before the roll is there after it, on the new holders
	// (the old ones restarted empty).
	c := routedClient(t, after)
	missed := 0
	for _, k := range keys {
		if it, err := c.Get(k); err != nil || string(it.Value) != "v-"+k {
			missed++
		}
	}
	if missed > 0 {
		t.Errorf("%d of %d keys set before the roll miss after it", missed, len(keys))
	}
	if n, ok := m.api.metricValue(`mcrib_roll_nodes{pool="default",state="restarted"}`); ok && n != float64(len(p.nodes)) {
		t.Errorf("mcrib_roll_nodes{state=restarted} = %v", n)
	}
}

// TestRollBlockedByANodeThatDoesNotComeBack: a released node whose
// memcached does not start again blocks the roll at restart_timeout with
// a sentence naming it, `mcrib roll --exec` exits 1, and nothing else
// moves meanwhile (the holder next in line keeps its slot); once the
// memcached starts again, the roll goes on.
func TestRollBlockedByANodeThatDoesNotComeBack(t *testing.T) {
	const slots = 2
	p := newZonedPool(t, []string{"a", "b"}, 2)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", fmt.Sprint(slots), "--hold", "10m",
		"--warm-for", "30s", "--warm-min", "2s")...)...)
	before := filled(t, p, m, slots)
	var spare string
	for _, id := range p.ids {
		if before.SlotOf(id) < 0 {
			spare = id
			break
		}
	}
	holder := before.Slot(0).ID
	r := newRestarter(t, p)
	r.mu.Lock()
	r.refuse[spare] = true
	r.mu.Unlock()
	code, out := rollCLI(t, m.Addr, 2*time.Minute, "--nodes", spare+","+holder, "--reason", "kernel patch", "--restart-timeout", "10s", "--exec", r.command())
	if code != 1 || !strings.Contains(out, "blocked") || !strings.Contains(out, "node "+spare+" did not restart within 10s") {
		t.Fatalf("mcrib roll --exec with a node that does not come back: exit %d\n%s", code, out)
	}
	events, err := m.api.events()
	if err != nil {
		t.Fatal(err)
	}
	var blocked string
	for _, e := range events {
		if e.Kind == mcribapi.EventRollBlocked {
			blocked = e.Reason
		}
	}
	if !strings.Contains(blocked, "node "+spare+" did not restart within 10s") {
		t.Errorf("no roll blocked event naming %s: %q", spare, blocked)
	}
	after := m.slotMap()
	if !after.SameSlots(before) || after.Generation() != before.Generation() || after.AnyIncoming() {
		t.Errorf("the slots moved while the roll was blocked: %v, was %v", after.Slots(), before.Slots())
	}
	roll := func() *mcribapi.RollEntry {
		_, body, _ := m.call("GET", "/v1/roll", "", "")
		doc, _ := decodeAs[mcribapi.RollDoc](body, "GET /v1/roll")
		return doc.Roll
	}
	if e := roll(); e == nil || e.State != mcribapi.RollBlocked || e.Nodes[1].State != mcribapi.RollWaiting {
		t.Fatalf("the roll after the timeout: %+v", e)
	}
	// Fixed: the memcached starts again, and the roll goes on.
	p.nodes[spare].Start(t)
	testenv.Eventually(t, 30*time.Second, "the roll goes on once the node is back", func() bool {
		e := roll()
		return e != nil && e.State == mcribapi.RollRolling && e.Nodes[0].State == mcribapi.RollRestarted && e.Nodes[1].State != mcribapi.RollWaiting
	})
}
