package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

// The harness of the zone tests (issue 14, CONTRACT.md section 7). They are
// black-box: every document is decoded here as the contract names it, not
// through mcrib's own types, so that they hold against any implementation
// of the contract.

// zWarming is a slot's warming object.
type zWarming struct {
	NodeID string    `json:"node_id"`
	Addr   string    `json:"addr"`
	Until  time.Time `json:"until"`
}

// zSlot is one entry of the slot map's slots.
type zSlot struct {
	Slot    int       `json:"slot"`
	NodeID  string    `json:"node_id"`
	Addr    string    `json:"addr"`
	AZ      string    `json:"az"`
	Warming *zWarming `json:"warming"`
}

// zSpare is one entry of the slot map's spares.
type zSpare struct {
	NodeID string `json:"node_id"`
	Addr   string `json:"addr"`
	AZ     string `json:"az"`
}

// zMap is the slot map document, with the warming objects of version 3.
type zMap struct {
	Pool       string   `json:"pool"`
	NumSlots   int      `json:"num_slots"`
	Generation uint64   `json:"generation"`
	Slots      []zSlot  `json:"slots"`
	Spares     []zSpare `json:"spares"`
}

// invalid returns why m breaks the slot map's rules (section 4 and 7), or
// "": num_slots entries in slot order, no node twice, no address twice, a
// warming source neither holding a slot nor listed as a spare.
func (m *zMap) invalid() string {
	if len(m.Slots) != m.NumSlots {
		return fmt.Sprintf("num_slots %d but %d slots listed", m.NumSlots, len(m.Slots))
	}
	ids, addrs := map[string]int{}, map[string]int{}
	for i, s := range m.Slots {
		if s.Slot != i {
			return fmt.Sprintf("entry %d names slot %d", i, s.Slot)
		}
		if s.NodeID == "" {
			continue
		}
		if j, dup := ids[s.NodeID]; dup {
			return fmt.Sprintf("node %s holds slots %d and %d", s.NodeID, j, i)
		}
		if j, dup := addrs[s.Addr]; dup {
			return fmt.Sprintf("address %s holds slots %d and %d", s.Addr, j, i)
		}
		ids[s.NodeID], addrs[s.Addr] = i, i
	}
	for _, sp := range m.Spares {
		if j, dup := ids[sp.NodeID]; dup {
			return fmt.Sprintf("spare %s also holds slot %d", sp.NodeID, j)
		}
	}
	for i, s := range m.Slots {
		if s.Warming == nil {
			continue
		}
		if j, holds := ids[s.Warming.NodeID]; holds {
			return fmt.Sprintf("slot %d warms from %s, which holds slot %d", i, s.Warming.NodeID, j)
		}
		if m.isSpare(s.Warming.NodeID) {
			return fmt.Sprintf("slot %d warms from %s, which is listed in spares", i, s.Warming.NodeID)
		}
		if s.Warming.NodeID == s.NodeID {
			return fmt.Sprintf("slot %d warms from its own holder %s", i, s.NodeID)
		}
	}
	return ""
}

func (m *zMap) isSpare(id string) bool {
	return slices.ContainsFunc(m.Spares, func(s zSpare) bool { return s.NodeID == id })
}

// holders returns the set of nodes holding a slot.
func (m *zMap) holders() map[string]bool {
	out := map[string]bool{}
	for _, s := range m.Slots {
		if s.NodeID != "" {
			out[s.NodeID] = true
		}
	}
	return out
}

// slotOf returns the slot node id holds, or -1.
func (m *zMap) slotOf(id string) int {
	for i, s := range m.Slots {
		if s.NodeID == id {
			return i
		}
	}
	return -1
}

// zoneSlots counts the slots each zone holds, the zone of a node taken from
// zoneOf (the zone the test registered it in).
func (m *zMap) zoneSlots(zoneOf map[string]string) map[string]int {
	out := map[string]int{}
	for _, s := range m.Slots {
		if s.NodeID != "" {
			out[zoneOf[s.NodeID]]++
		}
	}
	return out
}

// warming returns the slots that carry a warming object.
func (m *zMap) warming() []int {
	var out []int
	for i, s := range m.Slots {
		if s.Warming != nil {
			out = append(out, i)
		}
	}
	return out
}

// zDrainEntry is one zone of the drain document.
type zDrainEntry struct {
	Percent       int       `json:"percent"`
	StepPercent   int       `json:"step_percent"`
	StepInterval  string    `json:"step_interval"`
	Reason        string    `json:"reason"`
	By            string    `json:"by"`
	At            time.Time `json:"at"`
	BaselineSlots int       `json:"baseline_slots"`
	Slots         int       `json:"slots"`
	TargetSlots   int       `json:"target_slots"`
	State         string    `json:"state"`
	Blocked       string    `json:"blocked"`
}

// zDrainDoc is the drain document.
type zDrainDoc struct {
	Zones map[string]zDrainEntry `json:"zones"`
}

// zZone is one entry of the status document's zones.
type zZone struct {
	Zone        string          `json:"zone"`
	Nodes       int             `json:"nodes"`
	Slots       int             `json:"slots"`
	Unreachable int             `json:"unreachable"`
	Absent      int             `json:"absent"`
	HitRate     *float64        `json:"hit_rate"`
	Drain       json.RawMessage `json:"drain"`
}

// zNode is one node of the status document, with the fields of version 3.
type zNode struct {
	ID        string `json:"id"`
	Addr      string `json:"addr"`
	AZ        string `json:"az"`
	Slot      *int   `json:"slot"`
	Reachable bool   `json:"reachable"`
	Consul    string `json:"consul"`
	State     string `json:"state"`
	Drained   bool   `json:"drained"`
	Warming   *int   `json:"warming"`
}

// zStatus is the part of the status document the zone tests read.
type zStatus struct {
	Leader           bool            `json:"leader"`
	Frozen           bool            `json:"frozen"`
	AutoFrozen       bool            `json:"auto_frozen"`
	AutoFreezeReason string          `json:"auto_freeze_reason"`
	Nodes            []zNode         `json:"nodes"`
	ZonesRaw         json.RawMessage `json:"zones"`
}

func (s zStatus) node(id string) (zNode, bool) {
	for _, n := range s.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return zNode{}, false
}

// zones returns the status document's zones by name. The contract shows
// one entry with its "zone" field, so a list; an object keyed by zone is
// read as well.
func (s zStatus) zones() (map[string]zZone, error) {
	out := map[string]zZone{}
	if len(s.ZonesRaw) == 0 || string(s.ZonesRaw) == "null" {
		return nil, fmt.Errorf("the status document has no zones")
	}
	var list []zZone
	if err := json.Unmarshal(s.ZonesRaw, &list); err == nil {
		for _, z := range list {
			out[z.Zone] = z
		}
		return out, nil
	}
	var byName map[string]zZone
	if err := json.Unmarshal(s.ZonesRaw, &byName); err != nil {
		return nil, fmt.Errorf("the status document's zones are neither a list nor an object: %s", s.ZonesRaw)
	}
	for name, z := range byName {
		if z.Zone == "" {
			z.Zone = name
		}
		out[name] = z
	}
	return out, nil
}

// api is an HTTP client of one mcrib API, addressed by base URL, that never
// fails the test by itself: the zone tests talk to replicas that may be
// killed.
type zAPI struct {
	base   string // "http://host:port"
	client *http.Client
}

func newZAPI(addr string) *zAPI {
	return &zAPI{base: "http://" + addr, client: &http.Client{Timeout: 10 * time.Second}}
}

// do sends method path with body (JSON, or none when "") and the bearer
// token tok unless "", and returns the status and the body; code 0 and the
// error text when there is no answer.
func (a *zAPI) do(method, path, body, tok string) (int, []byte) {
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// slotMap GETs /v1/slotmap (query without "?", may be "") and returns the
// document and its X-Mcrib-Index.
func (a *zAPI) slotMap(query string) (*zMap, string, error) {
	resp, err := a.client.Get(a.base + "/v1/slotmap?" + query)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET /v1/slotmap: %d %s", resp.StatusCode, b)
	}
	var m zMap
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, "", fmt.Errorf("decoding /v1/slotmap: %v: %s", err, b)
	}
	return &m, resp.Header.Get("X-Mcrib-Index"), nil
}

// status GETs /v1/status.
func (a *zAPI) status() (zStatus, error) {
	var st zStatus
	code, b := a.do("GET", "/v1/status", "", "")
	if code != http.StatusOK {
		return st, fmt.Errorf("GET /v1/status: %d %s", code, b)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("decoding /v1/status: %v", err)
	}
	return st, nil
}

// drain GETs /v1/drain; the raw body is returned too.
func (a *zAPI) drain() (zDrainDoc, []byte, error) {
	var d zDrainDoc
	code, b := a.do("GET", "/v1/drain", "", "")
	if code != http.StatusOK {
		return d, b, fmt.Errorf("GET /v1/drain: %d %s (CONTRACT.md section 7: 200 with the drain document)", code, b)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, b, fmt.Errorf("decoding /v1/drain: %v: %s", err, b)
	}
	if d.Zones == nil {
		return d, b, fmt.Errorf("GET /v1/drain: %s has no \"zones\" object (an empty document is {\"zones\": {}})", b)
	}
	return d, b, nil
}

// events GETs /v1/events.
func (a *zAPI) events() ([]zEvent, error) {
	var evs []zEvent
	code, b := a.do("GET", "/v1/events", "", "")
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/events: %d %s", code, b)
	}
	return evs, json.Unmarshal(b, &evs)
}

// zEvent is one decision of /v1/events.
type zEvent struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Node   string    `json:"node"`
	Reason string    `json:"reason"`
}

// mustDrain returns the drain document or fails the test.
func mustDrain(t *testing.T, a *zAPI) zDrainDoc {
	t.Helper()
	d, _, err := a.drain()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// isErrorBody reports whether b is {"error": "<one sentence>"}.
func isErrorBody(b []byte) bool {
	var e struct {
		Error string `json:"error"`
	}
	return json.Unmarshal(b, &e) == nil && e.Error != "" && !strings.Contains(e.Error, "\n")
}

// drainBody is a PUT /v1/drain/{zone} body.
func drainBody(reason string, percent, step int, every string) string {
	return fmt.Sprintf(`{"reason":%q,"percent":%d,"step_percent":%d,"step_interval":%q}`, reason, percent, step, every)
}

// mapSample is one slot map seen, and when.
type mapSample struct {
	at time.Time
	m  *zMap
}

// mapWatcher follows the slot map with blocking reads of GET /v1/slotmap
// (wait=1s, so there is a look at least every second), on whichever of the
// replicas answers, and keeps every document it sees but those older (a
// lower generation) than one seen before. Each is checked against the slot
// map's rules when seen.
type mapWatcher struct {
	apis func() []*zAPI

	mu      sync.Mutex
	samples []mapSample
	bad     []string
	last    error

	stop chan struct{}
	done chan struct{}
}

// watchMap starts a watcher over the replicas apis returns; it stops when
// the test ends.
func watchMap(t *testing.T, apis func() []*zAPI) *mapWatcher {
	w := &mapWatcher{apis: apis, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(w.close)
	return w
}

func (w *mapWatcher) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *mapWatcher) run() {
	defer close(w.done)
	index, which := "", 0
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		apis := w.apis()
		if len(apis) == 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		a := apis[which%len(apis)]
		q := "wait=1s"
		if index != "" {
			q += "&index=" + index
		}
		m, idx, err := a.slotMap(q)
		now := time.Now()
		w.mu.Lock()
		w.last = err
		if err == nil {
			// A replica that took over may serve an older map for a
			// moment: a look behind one already seen is not the pool's
			// state going back, so it is checked but not kept.
			if n := len(w.samples); n == 0 || m.Generation >= w.samples[n-1].m.Generation {
				w.samples = append(w.samples, mapSample{at: now, m: m})
			}
			if why := m.invalid(); why != "" {
				w.bad = append(w.bad, fmt.Sprintf("%s (generation %d): %s", now.Format("15:04:05.000"), m.Generation, why))
			}
		}
		w.mu.Unlock()
		if err != nil {
			which++ // another replica, or the same one once it is back
			index = ""
			time.Sleep(50 * time.Millisecond)
			continue
		}
		index = idx
	}
}

// latest returns the last map seen, or nil.
func (w *mapWatcher) latest() *zMap {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.samples) == 0 {
		return nil
	}
	return w.samples[len(w.samples)-1].m
}

// since returns the maps seen at or after from.
func (w *mapWatcher) since(from time.Time) []mapSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []mapSample
	for _, s := range w.samples {
		if !s.at.Before(from) {
			out = append(out, s)
		}
	}
	return out
}

// from returns the maps seen at or after from, led by the last one seen
// before it (the state a change at from started from).
func (w *mapWatcher) from(from time.Time) []mapSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []mapSample
	for i, s := range w.samples {
		if !s.at.Before(from) {
			if len(out) == 0 && i > 0 {
				out = append(out, w.samples[i-1])
			}
			out = append(out, s)
		}
	}
	return out
}

// invalid returns every rule broken by a map seen so far.
func (w *mapWatcher) invalid() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad...)
}

// lastErr returns the error of the last read, for messages.
func (w *mapWatcher) lastErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// waitMap waits until cond holds for the latest map seen, and returns it;
// it fails the test with what after timeout.
func (w *mapWatcher) waitMap(t *testing.T, timeout time.Duration, what string, cond func(*zMap) bool) *zMap {
	t.Helper()
	var m *zMap
	if !within(timeout, func() bool {
		m = w.latest()
		return m != nil && cond(m)
	}) {
		t.Fatalf("timed out after %v waiting for %s; last map %s; last read error %v", timeout, what, describeMap(w.latest()), w.lastErr())
	}
	return m
}

// describeMap is a short description of a slot map for messages.
func describeMap(m *zMap) string {
	if m == nil {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d [", m.Generation)
	for i, s := range m.Slots {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d:%s", i, s.NodeID)
		if s.Warming != nil {
			fmt.Fprintf(&b, "(warm from %s)", s.Warming.NodeID)
		}
	}
	b.WriteString("]")
	return b.String()
}

// paceViolation checks the pace of a drain (or return) in the maps seen:
// between any two looks less than window apart, zone's slots fell (rose,
// when rising) by at most maxStep. It returns the first violation, or "".
// window is the step interval less a margin for the delay of a look.
func paceViolation(samples []mapSample, zoneOf map[string]string, zone string, maxStep int, window time.Duration, rising bool) string {
	for i := range samples {
		ci := samples[i].m.zoneSlots(zoneOf)[zone]
		for j := i + 1; j < len(samples) && samples[j].at.Sub(samples[i].at) < window; j++ {
			cj := samples[j].m.zoneSlots(zoneOf)[zone]
			moved := ci - cj
			if rising {
				moved = cj - ci
			}
			if moved > maxStep {
				return fmt.Sprintf("zone %s went from %d to %d slots within %v (generation %d → %d), more than one step of %d in less than a step interval",
					zone, ci, cj, samples[j].at.Sub(samples[i].at).Round(time.Millisecond), samples[i].m.Generation, samples[j].m.Generation, maxStep)
			}
		}
	}
	return ""
}

// zoneCountsSeen lists the distinct successive slot counts of zone in
// samples, with when each was first seen: the drain's steps as seen.
func zoneCountsSeen(samples []mapSample, zoneOf map[string]string, zone string, from time.Time) string {
	var parts []string
	last := -1
	for _, s := range samples {
		if c := s.m.zoneSlots(zoneOf)[zone]; c != last {
			parts = append(parts, fmt.Sprintf("%d@%.1fs", c, s.at.Sub(from).Seconds()))
			last = c
		}
	}
	return strings.Join(parts, " → ")
}

// runCLI runs the mcrib binary with args against addr (host:port), with
// the extra environment env, and returns its exit code, stdout and stderr;
// it gives up after 30 s.
func runCLI(t *testing.T, addr string, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mcribBinary(t), args...)
	cmd.Env = append(append(os.Environ(), "MCRIB_ADDR=http://"+addr, "MCRIB_TOKEN="), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running mcrib %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

// zonedPool is a Consul dev agent with memcached nodes in zones whose IDs
// sort by zone: mc-a-1 … mc-a-N, mc-b-1 …, each registered with service
// meta az.
type zonedPool struct {
	*pool
	zoneOf map[string]string
}

// newZonedPool starts Consul and perZone memcached in each of zones.
func newZonedPool(t *testing.T, zones []string, perZone int) *zonedPool {
	t.Helper()
	p := &zonedPool{pool: &pool{consul: testenv.StartConsul(t), nodes: map[string]*testenv.Memcached{}}, zoneOf: map[string]string{}}
	for _, z := range zones {
		for i := range perZone {
			id := fmt.Sprintf("mc-%s-%d", z, i+1)
			p.nodes[id] = testenv.StartMemcached(t)
			p.ids = append(p.ids, id)
			p.zoneOf[id] = z
			p.registerZoned(t, id)
		}
	}
	return p
}

// registerZoned registers id (again) with its zone.
func (p *zonedPool) registerZoned(t *testing.T, id string) {
	t.Helper()
	testenv.Register(t, p.consul.Client, p.nodes[id], testenv.Registration{ID: id, Meta: map[string]string{"az": p.zoneOf[id]}})
}

// inZone returns the IDs of zone's nodes.
func (p *zonedPool) inZone(zone string) []string {
	var out []string
	for _, id := range p.ids {
		if p.zoneOf[id] == zone {
			out = append(out, id)
		}
	}
	return out
}

// spreadProblem returns why counts (slots per zone) is not the even spread
// of slots over zones (each zone ⌊slots/Z⌋ or ⌈slots/Z⌉), or "".
func spreadProblem(counts map[string]int, zones []string, slots int) string {
	lo, hi := slots/len(zones), (slots+len(zones)-1)/len(zones)
	for _, z := range zones {
		if c := counts[z]; c < lo || c > hi {
			return fmt.Sprintf("zone %s holds %d slots, want %d to %d (slots per zone: %v; CONTRACT.md section 7, spread)", z, c, lo, hi, counts)
		}
	}
	return ""
}

// flushChanges compares the cmd_flush of every node after a phase with
// before: each node of entered must have been flushed exactly once more,
// every other node not at all. It returns the problems found.
func flushChanges(before, after map[string]uint64, entered map[string]bool) []string {
	var bad []string
	ids := make([]string, 0, len(before))
	for id := range before {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a, ok := after[id]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s did not answer stats", id))
			continue
		}
		want := before[id]
		if entered[id] {
			want++
		}
		if a != want {
			what := "a node that entered no slot must not be flushed"
			if entered[id] {
				what = "a node entering a slot is flushed once, as part of its placement"
			}
			bad = append(bad, fmt.Sprintf("%s cmd_flush %d → %d, want %d (%s)", id, before[id], a, want, what))
		}
	}
	return bad
}

// entered returns the nodes holding a slot in after but not in before.
func entered(before, after *zMap) map[string]bool {
	out := map[string]bool{}
	was := before.holders()
	for id := range after.holders() {
		if !was[id] {
			out[id] = true
		}
	}
	return out
}

// moves returns mcrib_slot_moves_total of kind ("warm" or "cold") from the
// API's /metrics, and false when there is no such sample.
func (a *zAPI) moves(kind string) (float64, bool) {
	code, body := a.do("GET", "/metrics", "", "")
	if code != http.StatusOK {
		return 0, false
	}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, "mcrib_slot_moves_total{")
		if !ok {
			continue
		}
		labels, val, ok := strings.Cut(rest, "} ")
		if !ok || !strings.Contains(labels, `kind="`+kind+`"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(val, &v); err == nil {
			return v, true
		}
	}
	return 0, false
}

// short returns the first line of s, cut at 200 bytes, for messages that
// quote a command's output (a usage text would drown the failure).
func short(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
