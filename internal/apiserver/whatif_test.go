package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
	"github.com/mcrib/mcrib/sim"
)

// whatIfPlane is a ControlPlane of a four-slot pool over zones a, b and
// c, with a status document, whose checks answer err.
type whatIfPlane struct {
	*fakePlane
	mu     sync.Mutex
	err    error
	checks []string
}

func (p *whatIfPlane) Status() mcribapi.Status {
	st := mcribapi.Status{Pool: "default", Flags: &mcribapi.PoolFlags{Hold: "1m0s", WarmFor: "30m0s", WarmMin: "30s"}}
	for _, n := range append(p.SlotMap().Slots(), p.SlotMap().Spares()...) {
		st.Nodes = append(st.Nodes, mcribapi.NodeStatus{ID: n.ID, Addr: n.Addr, AZ: n.AZ, Consul: mcribapi.ConsulPresent, Reachable: true})
	}
	return st
}

func (p *whatIfPlane) CheckDrain(_ context.Context, zone string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks = append(p.checks, "drain "+zone)
	return p.err
}

func (p *whatIfPlane) CheckResize(_ context.Context, req mcribapi.Resize) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks = append(p.checks, fmt.Sprintf("resize %d", req.NumSlots))
	return p.err
}

// limitBoot is a boot limiter at a fixed limit, with the pool's hit
// rate.
type limitBoot struct{ countingBoot }

func (b *limitBoot) Document() ratelimit.Document {
	hr := 0.97
	return ratelimit.Document{Mode: "auto", Limit: 800, HitRate: &hr}
}

// whatIfAPI is a server with a token over a whatIfPlane whose
// predictions are recorded and answered by a fixed one.
func whatIfAPI(t *testing.T) (*Server, *whatIfPlane, *[]sim.Action) {
	t.Helper()
	var nodes []cachenodes.Node
	for i, z := range []string{"a", "b", "c", "a", "b", "c"} {
		nodes = append(nodes, cachenodes.Node{ID: fmt.Sprintf("mc-%d", i), Addr: fmt.Sprintf("127.0.0.1:%d", 11211+i), AZ: z})
	}
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "default", Generation: 1, UpdatedAt: time.Now(), Slots: nodes[:4], Spares: nodes[4:]})
	if err != nil {
		t.Fatal(err)
	}
	plane := &whatIfPlane{fakePlane: newFakePlane(m)}
	a := newServer(Options{Loop: plane, Boot: &limitBoot{}, Token: "s3cret"})
	a.ops = NewOps(eventlog.NewLog(eventlog.Options{}), eventlog.NewHistory(eventlog.HistoryOptions{}))
	var asked []sim.Action
	a.predict = func(_ context.Context, sh sim.Shape, act sim.Action) (sim.Prediction, error) {
		if sh.Fleet == nil || len(sh.Fleet.Nodes) != 6 || sh.HitRate != 0.97 || sh.Flags == nil || sh.Flags.WarmMin != "30s" {
			t.Errorf("the simulator got the shape %+v, want the pool's six nodes, hit rate and flags", sh)
		}
		asked = append(asked, act)
		return sim.Prediction{Duration: 4*time.Minute + 30*time.Second + 200*time.Millisecond, Over: true, LowestHitRate: 0.95, ExtraMisses: 12000, LowestBootLimit: 1000}, nil
	}
	return a, plane, &asked
}

// TestWhatIf: POST /v1/whatif answers the simulator's prediction of a
// drain and of a resize, in the fields of docs/api.md, without a token
// though one is configured; what the endpoint would refuse with 409 is a
// 200 whose blocked says so, and nothing simulated; nothing is changed
// or recorded as an operator's change.
func TestWhatIf(t *testing.T) {
	a, plane, asked := whatIfAPI(t)
	rr := call(a, "POST", "/v1/whatif", `{"action":"drain","zone":"b","step_percent":50,"step_interval":"5s"}`, "")
	if rr.Code != 200 {
		t.Fatalf("drain what-if: %d %s", rr.Code, rr.Body)
	}
	if got, want := strings.TrimSpace(rr.Body.String()),
		`{"action":"drain","duration":"4m30s","lowest_hit_rate":0.95,"extra_misses":12000,"lowest_boot_limit":1000,"blocked":""}`; got != want {
		t.Errorf("answer %s, want %s", got, want)
	}
	rr = call(a, "POST", "/v1/whatif", `{"action":"resize","num_slots":8,"reason":"grown"}`, "")
	if rr.Code != 200 || !strings.Contains(rr.Body.String(), `"action":"resize"`) {
		t.Fatalf("resize what-if: %d %s", rr.Code, rr.Body)
	}
	if len(*asked) != 2 || (*asked)[0].Zone != "b" || (*asked)[0].Drain.StepPercent != 50 || (*asked)[0].Drain.StepInterval != 5*time.Second ||
		(*asked)[0].Drain.Percent != 100 || (*asked)[1].Resize.NumSlots != 8 || (*asked)[1].Resize.Reason != "grown" {
		t.Errorf("the simulator was asked %+v", *asked)
	}
	plane.err = fmt.Errorf("%w: cannot resize the pool now: zone \"b\" is drained (mcrib undrain gives it back first)", mcribapi.ErrRefused)
	rr = call(a, "POST", "/v1/whatif", `{"action":"resize","num_slots":8}`, "")
	var p mcribapi.Prediction
	if rr.Code != 200 || json.Unmarshal(rr.Body.Bytes(), &p) != nil || !strings.Contains(p.Blocked, `zone "b" is drained`) ||
		p.Duration != "0s" || p.LowestHitRate != 0.97 || p.LowestBootLimit != 800 || p.ExtraMisses != 0 {
		t.Errorf("a refused resize: %d %s, want 200 with blocked naming the drain and the pool as it is", rr.Code, rr.Body)
	}
	if len(*asked) != 2 {
		t.Errorf("a refused action was simulated: %+v", *asked)
	}
	if evs := a.ops.log.Since(0); len(evs) != 0 {
		t.Errorf("a what-if was recorded: %+v", evs)
	}
}

// TestWhatIfRefusals: bad input is a 400 with one sentence, an unknown
// zone the drain's 404, and the body rules hold as for any POST (413,
// 415, and the browser rule's 403); never 401, and nothing is simulated.
func TestWhatIfRefusals(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		check      error
		want       int
		wantIn     string
	}{
		{"not json", `action=drain`, nil, 400, "JSON object"},
		{"no action", `{"zone":"b"}`, nil, 400, `needs an "action"`},
		{"unknown action", `{"action":"explode"}`, nil, 400, `"action" must be "drain" or "resize", not "explode"`},
		{"a roll", `{"action":"roll","all":true}`, nil, 400, `not "roll"`},
		{"action not a string", `{"action":3}`, nil, 400, `"action" must be a string`},
		{"drain without zone", `{"action":"drain"}`, nil, 400, `names its "zone"`},
		{"drain percent 0", `{"action":"drain","zone":"b","percent":0}`, nil, 400, `"percent"`},
		{"drain interval 2h", `{"action":"drain","zone":"b","step_interval":"2h"}`, nil, 400, "step_interval"},
		{"drain unknown field", `{"action":"drain","zone":"b","slots":3}`, nil, 400, "JSON"},
		{"drain reason too long", `{"action":"drain","zone":"b","reason":"` + strings.Repeat("x", 513) + `"}`, nil, 400, "512"},
		{"resize without slots", `{"action":"resize"}`, nil, 400, `"num_slots" is required`},
		{"resize not twice", `{"action":"resize","num_slots":12}`, fmt.Errorf("%w: \"num_slots\" must be exactly twice the pool's 4 slots (8), not 12", mcribapi.ErrBadRequest), 400, "exactly twice"},
		{"unknown zone", `{"action":"drain","zone":"x"}`, fmt.Errorf("%w: no node is known in zone \"x\"", mcribapi.ErrUnknownZone), 404, `no node is known in zone "x"`},
		{"too large", `{"action":"drain","zone":"b","reason":"` + strings.Repeat("x", 70<<10) + `"}`, nil, 413, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, plane, asked := whatIfAPI(t)
			plane.err = tt.check
			wantRefused(t, call(a, "POST", "/v1/whatif", tt.body, ""), tt.want, tt.wantIn)
			if len(*asked) != 0 {
				t.Errorf("a refused what-if was simulated: %+v", *asked)
			}
		})
	}
	a, _, asked := whatIfAPI(t)
	rr := callWith(a.Handler(), "POST", "/v1/whatif", `{"action":"drain","zone":"b"}`, map[string]string{"Content-Type": "text/plain"})
	if rr.Code != 415 {
		t.Errorf("a body sent as text/plain: %d %s, want 415", rr.Code, rr.Body)
	}
	rr = callWith(a.Handler(), "POST", "/v1/whatif", `{"action":"drain","zone":"b"}`, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"})
	if rr.Code != 403 {
		t.Errorf("a cross-site what-if: %d %s, want 403", rr.Code, rr.Body)
	}
	if len(*asked) != 0 {
		t.Errorf("a refused what-if was simulated: %+v", *asked)
	}
}

// callWith sends a request with the given headers to h, from a program
// on the loopback.
func callWith(h http.Handler, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = "127.0.0.1:7070"
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	return rr
}
