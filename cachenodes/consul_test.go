package cachenodes

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/internal/testenv"
)

// fakeReply is one scripted answer of fakeConsul.
type fakeReply struct {
	status  int // 0 means 200
	index   uint64
	entries []*api.ServiceEntry
}

// fakeConsul mimics GET /v1/health/service/<name>: it answers the scripted
// replies in order, then holds every further query open like a blocking
// query on which nothing changes, until the client gives up.
type fakeConsul struct {
	client *api.Client

	mu      sync.Mutex
	replies []fakeReply
	queries []url.Values
	paths   []string
	times   []time.Time
	closed  chan struct{}
}

func startFakeConsul(t *testing.T, replies ...fakeReply) *fakeConsul {
	t.Helper()
	f := &fakeConsul{replies: replies, closed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.closed)
		srv.Close()
	})
	client, err := api.NewClient(&api.Config{Address: srv.Listener.Addr().String(), Scheme: "http"})
	if err != nil {
		t.Fatalf("creating consul client: %v", err)
	}
	f.client = client
	return f
}

func (f *fakeConsul) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.queries = append(f.queries, r.URL.Query())
	f.paths = append(f.paths, r.URL.Path)
	f.times = append(f.times, time.Now())
	if len(f.replies) == 0 {
		f.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-f.closed:
		}
		return
	}
	reply := f.replies[0]
	f.replies = f.replies[1:]
	f.mu.Unlock()

	if reply.status != 0 && reply.status != http.StatusOK {
		http.Error(w, "scripted failure", reply.status)
		return
	}
	body, err := json.Marshal(reply.entries)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Consul-Index", strconv.FormatUint(reply.index, 10))
	w.Header().Set("X-Consul-LastContact", "0")
	w.Header().Set("X-Consul-KnownLeader", "true")
	_, _ = w.Write(body)
}

// waitQueries waits until the fake has received n queries and returns them.
func (f *fakeConsul) waitQueries(t *testing.T, n int) ([]url.Values, []time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		if len(f.queries) >= n {
			q, ts := slices.Clone(f.queries), slices.Clone(f.times)
			f.mu.Unlock()
			return q, ts
		}
		got := len(f.queries)
		f.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the fake consul received %d queries, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// entry builds a health entry of service "memcached" with one check per
// status (serfHealth first, as Consul lists the node check).
func entry(id, node string, port int, statuses ...string) *api.ServiceEntry {
	e := &api.ServiceEntry{
		Node:    &api.Node{Node: node, Address: "10.0.0.1"},
		Service: &api.AgentService{ID: id, Service: "memcached", Address: "127.0.0.1", Port: port},
	}
	for i, st := range statuses {
		c := &api.HealthCheck{Node: node, CheckID: "service:" + id + ":" + strconv.Itoa(i), Status: st, ServiceID: id}
		if i == 0 {
			c.CheckID, c.ServiceID = "serfHealth", ""
		}
		e.Checks = append(e.Checks, c)
	}
	return e
}

// runRecorder runs a source and records what it delivers.
type runRecorder struct {
	mu      sync.Mutex
	answers []Membership
	atimes  []time.Time
	errs    []error
	etimes  []time.Time
	done    chan struct{}
	cancel  context.CancelFunc
}

// startRun runs src.Run in a goroutine until the test ends (or stop).
func startRun(t *testing.T, src *ConsulSource) *runRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runRecorder{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(r.done)
		src.Run(ctx, r.onAnswer, r.onError)
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *runRecorder) onAnswer(m Membership) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = append(r.answers, m)
	r.atimes = append(r.atimes, time.Now())
}

func (r *runRecorder) onError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
	r.etimes = append(r.etimes, time.Now())
}

// stop cancels Run and waits for it to return.
func (r *runRecorder) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Error("Run did not return within 5s of its context being cancelled")
	}
}

func (r *runRecorder) snapshot() ([]Membership, []time.Time, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.answers), slices.Clone(r.atimes), slices.Clone(r.errs)
}

func newTestSource(t *testing.T, client *api.Client, opts ConsulSourceOptions) *ConsulSource {
	t.Helper()
	opts.Client = client
	if opts.Service == "" {
		opts.Service = "memcached"
	}
	src, err := NewConsulSource(opts)
	if err != nil {
		t.Fatalf("NewConsulSource: %v", err)
	}
	return src
}

func ids(m Membership) []string {
	var out []string
	for _, in := range m.Instances {
		out = append(out, in.ID)
	}
	return out
}

func TestNewConsulSourceOptions(t *testing.T) {
	client, err := api.NewClient(&api.Config{Address: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    ConsulSourceOptions
		wantErr string
	}{
		{name: "no client", opts: ConsulSourceOptions{Service: "memcached"}, wantErr: "Client is required"},
		{name: "no service", opts: ConsulSourceOptions{Client: client}, wantErr: "Service is required"},
		{name: "negative wait", opts: ConsulSourceOptions{Client: client, Service: "s", WaitTime: -1}, wantErr: "negative"},
		{name: "negative backoff", opts: ConsulSourceOptions{Client: client, Service: "s", MaxBackoff: -1}, wantErr: "negative"},
		{name: "defaults", opts: ConsulSourceOptions{Client: client, Service: "s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := NewConsulSource(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewConsulSource = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewConsulSource: %v", err)
			}
			if src.waitTime != DefaultConsulWaitTime || src.minInterval != DefaultConsulMinInterval ||
				src.maxBackoff != DefaultConsulMaxBackoff || src.firstBackoff != firstConsulBackoff || src.logger == nil {
				t.Errorf("defaults not applied: %+v", src)
			}
		})
	}
	src, err := NewConsulSource(ConsulSourceOptions{Client: client, Service: "s", MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if src.firstBackoff != 20*time.Millisecond {
		t.Errorf("first backoff %v above MaxBackoff 20ms", src.firstBackoff)
	}
}

func TestConsulSourceInstances(t *testing.T) {
	withMeta := func(e *api.ServiceEntry, svcMeta, nodeMeta map[string]string) *api.ServiceEntry {
		e.Service.Meta, e.Node.Meta = svcMeta, nodeMeta
		return e
	}
	noSvcAddr := entry("mc-4", "n4", 11214, "passing", "passing")
	noSvcAddr.Service.Address = ""
	v6 := entry("mc-6", "n6", 11216, "passing")
	v6.Service.Address = "::1"
	maintSvc := entry("mc-5", "n5", 11215, "passing", "passing")
	maintSvc.Checks = append(maintSvc.Checks, &api.HealthCheck{CheckID: "_service_maintenance:mc-5", ServiceID: "mc-5", Status: "critical"})
	maintNode := entry("mc-7", "n7", 11217, "passing")
	maintNode.Checks = append(maintNode.Checks, &api.HealthCheck{CheckID: "_node_maintenance", Status: "critical"})
	otherMaint := entry("mc-8", "n8", 11218, "passing")
	otherMaint.Checks = append(otherMaint.Checks, &api.HealthCheck{CheckID: "_service_maintenance:mc-80", ServiceID: "mc-80", Status: "critical"})

	tests := []struct {
		name    string
		entries []*api.ServiceEntry
		want    []Instance
	}{
		{name: "empty", entries: nil, want: []Instance{}},
		{
			name:    "sorted by ID, service meta az wins over node meta",
			entries: []*api.ServiceEntry{withMeta(entry("mc-2", "n2", 11212, "passing", "passing"), nil, map[string]string{"az": "b"}), withMeta(entry("mc-1", "n1", 11211, "passing"), map[string]string{"az": "a"}, map[string]string{"az": "z"}), entry("mc-3", "n3", 11213, "passing")},
			want: []Instance{
				{Node: Node{ID: "mc-1", Addr: "127.0.0.1:11211", AZ: "a"}, Present: true},
				{Node: Node{ID: "mc-2", Addr: "127.0.0.1:11212", AZ: "b"}, Present: true},
				{Node: Node{ID: "mc-3", Addr: "127.0.0.1:11213", AZ: ""}, Present: true},
			},
		},
		{
			name:    "node address when the service has none; IPv6 bracketed",
			entries: []*api.ServiceEntry{noSvcAddr, v6},
			want: []Instance{
				{Node: Node{ID: "mc-4", Addr: "10.0.0.1:11214"}, Present: true},
				{Node: Node{ID: "mc-6", Addr: "[::1]:11216"}, Present: true},
			},
		},
		{
			name: "a check not passing makes it absent",
			entries: []*api.ServiceEntry{
				entry("mc-1", "n1", 11211, "passing", "warning"),
				entry("mc-2", "n2", 11212, "critical", "passing"),
				entry("mc-3", "n3", 11213, "passing", "critical"),
				entry("mc-4", "n4", 11214),
			},
			want: []Instance{
				{Node: Node{ID: "mc-1", Addr: "127.0.0.1:11211"}},
				{Node: Node{ID: "mc-2", Addr: "127.0.0.1:11212"}},
				{Node: Node{ID: "mc-3", Addr: "127.0.0.1:11213"}},
				{Node: Node{ID: "mc-4", Addr: "127.0.0.1:11214"}, Present: true},
			},
		},
		{
			name:    "maintenance",
			entries: []*api.ServiceEntry{maintSvc, maintNode, otherMaint},
			want: []Instance{
				{Node: Node{ID: "mc-5", Addr: "127.0.0.1:11215"}, Maintenance: true},
				{Node: Node{ID: "mc-7", Addr: "127.0.0.1:11217"}, Maintenance: true},
				{Node: Node{ID: "mc-8", Addr: "127.0.0.1:11218"}},
			},
		},
		{
			name:    "duplicate ID: the passing one wins",
			entries: []*api.ServiceEntry{entry("mc-1", "a-node", 1, "passing", "critical"), entry("mc-1", "b-node", 2, "passing", "passing")},
			want:    []Instance{{Node: Node{ID: "mc-1", Addr: "127.0.0.1:2"}, Present: true}},
		},
		{
			name:    "duplicate ID: both passing, first node name wins",
			entries: []*api.ServiceEntry{entry("mc-1", "b-node", 2, "passing"), entry("mc-1", "a-node", 1, "passing")},
			want:    []Instance{{Node: Node{ID: "mc-1", Addr: "127.0.0.1:1"}, Present: true}},
		},
		{
			name:    "duplicate ID: neither passing, first node name wins",
			entries: []*api.ServiceEntry{entry("mc-1", "a-node", 1, "critical"), entry("mc-1", "b-node", 2, "critical")},
			want:    []Instance{{Node: Node{ID: "mc-1", Addr: "127.0.0.1:1"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			src := &ConsulSource{service: "memcached", logger: slog.New(slog.NewTextHandler(&logs, nil))}
			got := src.instances(tt.entries)
			if !slices.Equal(got, tt.want) {
				t.Errorf("instances =\n%+v\nwant\n%+v", got, tt.want)
			}
			dup := strings.HasPrefix(tt.name, "duplicate")
			if warned := strings.Contains(logs.String(), "level=WARN"); warned != dup {
				t.Errorf("logged %q; want a warning: %v", logs.String(), dup)
			}
		})
	}
}

func TestMembershipInstance(t *testing.T) {
	m := Membership{Instances: []Instance{{Node: Node{ID: "c"}, Present: true}, {Node: Node{ID: "a"}}}}
	if in, ok := m.Instance("c"); !ok || !in.Present {
		t.Errorf("Instance(c) = %+v, %v", in, ok)
	}
	if in, ok := m.Instance("a"); !ok || in.ID != "a" || in.Present {
		t.Errorf("Instance(a) = %+v, %v", in, ok)
	}
	if _, ok := m.Instance("b"); ok {
		t.Error("Instance(b) found an instance that is not listed")
	}
}

func TestConsulSourceBlockingQueriesAndIndexReset(t *testing.T) {
	leakcheck.Check(t)
	a := entry("mc-1", "n1", 11211, "passing", "passing")
	b := entry("mc-2", "n2", 11212, "passing", "passing")
	f := startFakeConsul(t,
		fakeReply{index: 10, entries: []*api.ServiceEntry{a}},
		fakeReply{index: 20, entries: []*api.ServiceEntry{a, b}},
		fakeReply{index: 5, entries: []*api.ServiceEntry{a, b}}, // Consul restarted: the index went backwards
		fakeReply{index: 7, entries: []*api.ServiceEntry{a}},
		fakeReply{index: 0, entries: []*api.ServiceEntry{a}}, // a broken index
		fakeReply{index: 9, entries: []*api.ServiceEntry{b}},
	)
	src := newTestSource(t, f.client, ConsulSourceOptions{Tag: "pool-a", WaitTime: 42 * time.Second})
	r := startRun(t, src)
	queries, _ := f.waitQueries(t, 7) // 6 answered, the 7th blocks
	r.stop(t)

	wantIndex := []string{"", "10", "20", "", "7", "", "9"}
	for i, q := range queries {
		if got := q.Get("index"); got != wantIndex[i] {
			t.Errorf("query %d: index=%q, want %q", i, got, wantIndex[i])
		}
		wantWait := "42000ms"
		if wantIndex[i] == "" {
			wantWait = ""
		}
		if got := q.Get("wait"); got != wantWait {
			t.Errorf("query %d: wait=%q, want %q", i, got, wantWait)
		}
		if got := q.Get("tag"); got != "pool-a" {
			t.Errorf("query %d: tag=%q, want pool-a", i, got)
		}
		if q.Has("passing") {
			t.Errorf("query %d asks for passing instances only", i)
		}
	}
	f.mu.Lock()
	path := f.paths[0]
	f.mu.Unlock()
	if path != "/v1/health/service/memcached" {
		t.Errorf("path %q", path)
	}

	answers, _, errs := r.snapshot()
	if len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
	// Index 5 lists what index 20 did, and index 0 what index 7 did: not
	// delivered again.
	var got []string
	for _, m := range answers {
		got = append(got, strconv.FormatUint(m.Index, 10)+":"+strings.Join(ids(m), ","))
	}
	want := []string{"10:mc-1", "20:mc-1,mc-2", "7:mc-1", "9:mc-2"}
	if !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
}

func TestConsulSourceSkipsEqualAnswers(t *testing.T) {
	leakcheck.Check(t)
	up := entry("mc-1", "n1", 11211, "passing", "passing")
	down := entry("mc-1", "n1", 11211, "passing", "critical")
	downOtherOutput := entry("mc-1", "n1", 11211, "passing", "critical")
	downOtherOutput.Checks[1].Output = "dial tcp: connection refused"
	moved := entry("mc-1", "n1", 11299, "passing", "critical")
	f := startFakeConsul(t,
		fakeReply{index: 1, entries: []*api.ServiceEntry{up}},
		fakeReply{index: 2, entries: []*api.ServiceEntry{up}},   // same instances
		fakeReply{index: 2, entries: []*api.ServiceEntry{up}},   // a blocking query timed out
		fakeReply{index: 3, entries: []*api.ServiceEntry{down}}, // check failed
		fakeReply{index: 4, entries: []*api.ServiceEntry{downOtherOutput}},
		fakeReply{index: 5, entries: []*api.ServiceEntry{moved}}, // new port
		fakeReply{index: 6, entries: []*api.ServiceEntry{}},      // gone
		fakeReply{index: 7, entries: []*api.ServiceEntry{}},
	)
	r := startRun(t, newTestSource(t, f.client, ConsulSourceOptions{}))
	f.waitQueries(t, 9)
	r.stop(t)
	answers, _, _ := r.snapshot()
	var got []uint64
	for _, m := range answers {
		got = append(got, m.Index)
	}
	if want := []uint64{1, 3, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("delivered the answers of indexes %v, want %v", got, want)
	}
	if len(answers) == 4 {
		if answers[1].Instances[0].Present || !answers[0].Instances[0].Present {
			t.Errorf("presence: %+v then %+v", answers[0], answers[1])
		}
		if len(answers[3].Instances) != 0 {
			t.Errorf("last answer %+v, want no instances", answers[3])
		}
	}
}

func TestConsulSourceFirstAnswerAlwaysDelivered(t *testing.T) {
	leakcheck.Check(t)
	f := startFakeConsul(t, fakeReply{index: 3, entries: nil})
	r := startRun(t, newTestSource(t, f.client, ConsulSourceOptions{}))
	f.waitQueries(t, 2)
	r.stop(t)
	answers, _, _ := r.snapshot()
	if len(answers) != 1 || len(answers[0].Instances) != 0 || answers[0].Index != 3 {
		t.Errorf("delivered %+v, want one empty answer at index 3", answers)
	}
}

func TestConsulSourceBacksOffOnErrors(t *testing.T) {
	leakcheck.Check(t)
	const failures = 8
	replies := []fakeReply{{index: 3, entries: []*api.ServiceEntry{entry("mc-1", "n1", 1, "critical")}}}
	for range failures {
		replies = append(replies, fakeReply{status: http.StatusInternalServerError})
	}
	replies = append(replies, fakeReply{index: 4, entries: []*api.ServiceEntry{entry("mc-1", "n1", 1, "passing")}})
	f := startFakeConsul(t, replies...)
	src := newTestSource(t, f.client, ConsulSourceOptions{MaxBackoff: 40 * time.Millisecond})
	src.firstBackoff = 5 * time.Millisecond
	r := startRun(t, src)
	queries, times := f.waitQueries(t, failures+3)
	r.stop(t)
	// The first query after the first answer blocks on its index; after a
	// failure the next query starts over without one (the Consul that
	// answers may have restarted with a lower index).
	wantIndex := map[int]string{1: "3", failures + 2: "4"}
	for i, q := range queries {
		if got, want := q.Get("index"), wantIndex[i]; got != want {
			t.Errorf("query %d: index=%q, want %q", i, got, want)
		}
	}
	times = times[1:]

	answers, _, errs := r.snapshot()
	if len(errs) != failures {
		t.Errorf("onError called %d times, want %d", len(errs), failures)
	}
	for _, err := range errs {
		if !strings.Contains(err.Error(), `reading consul health of service "memcached"`) || !strings.Contains(err.Error(), "500") {
			t.Errorf("error %q does not say what failed", err)
			break
		}
	}
	if len(answers) != 2 || answers[1].Index != 4 {
		t.Errorf("delivered %+v, want the answers before and after the errors", answers)
	}
	// Gaps after failures 1..8: 5, 10, 20, 40, 40, 40, 40, 40 ms, each
	// drawn from the upper half of its step (internal/backoff); uncapped,
	// the last four would sum to at least 600ms.
	want := []time.Duration{5, 10, 20, 40, 40, 40, 40, 40}
	var lastFour time.Duration
	for i := range failures {
		gap := times[i+1].Sub(times[i])
		if min := want[i] * time.Millisecond / 2; gap < min {
			t.Errorf("retry %d came %v after the failure, want at least %v", i+1, gap, min)
		}
		if i >= failures-4 {
			lastFour += gap
		}
	}
	if lastFour > 400*time.Millisecond {
		t.Errorf("the last four backoffs took %v together; MaxBackoff 40ms does not cap them", lastFour)
	}
	// After the success the backoff starts over: the blocking query follows
	// at once (MinInterval only).
	if gap := times[failures+1].Sub(times[failures]); gap > 500*time.Millisecond {
		t.Errorf("the query after a success came %v later", gap)
	}
}

func TestConsulSourceBackoffValues(t *testing.T) {
	client, err := api.NewClient(&api.Config{Address: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	b := newTestSource(t, client, ConsulSourceOptions{}).watchOptions().Backoff
	if b.Min != 100*time.Millisecond || b.Max != 5*time.Second {
		t.Fatalf("backoff from %v to %v, want 100ms to 5s", b.Min, b.Max)
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for i, w := range want {
		w *= time.Millisecond
		for range 20 {
			if got := b.Delay(i + 1); got >= w || got < w/2 {
				t.Fatalf("wait after failure %d = %v, want within [%v, %v)", i+1, got, w/2, w)
			}
		}
	}
	if got := b.Delay(1000); got >= 5*time.Second {
		t.Errorf("wait after failure 1000 = %v", got)
	}
}

func TestConsulSourceMinIntervalBetweenQueries(t *testing.T) {
	leakcheck.Check(t)
	const minInterval = 200 * time.Millisecond
	var replies []fakeReply
	for i := range 4 {
		replies = append(replies, fakeReply{index: uint64(i + 1), entries: []*api.ServiceEntry{entry("mc-1", "n1", 1000+i, "passing")}})
	}
	f := startFakeConsul(t, replies...)
	r := startRun(t, newTestSource(t, f.client, ConsulSourceOptions{MinInterval: minInterval}))
	_, times := f.waitQueries(t, 5)
	_, atimes, _ := r.snapshot()
	r.stop(t)
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < minInterval {
			t.Errorf("query %d came %v after the previous one, want at least MinInterval %v", i, gap, minInterval)
		}
	}
	// MinInterval delays the next query, never the delivery of an answer.
	if len(atimes) != 4 {
		t.Fatalf("delivered %d answers, want 4", len(atimes))
	}
	for i, at := range atimes {
		if lag := at.Sub(times[i]); lag > minInterval/2 {
			t.Errorf("answer %d delivered %v after its query started", i, lag)
		}
	}
}

func TestConsulSourceRunReturnsWhenCancelled(t *testing.T) {
	tests := []struct {
		name    string
		replies []fakeReply
		queries int
	}{
		{name: "during a blocking query", replies: []fakeReply{{index: 1}}, queries: 2},
		{name: "during a backoff", replies: []fakeReply{{status: http.StatusServiceUnavailable}}, queries: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			f := startFakeConsul(t, tt.replies...)
			src := newTestSource(t, f.client, ConsulSourceOptions{MaxBackoff: time.Hour})
			src.firstBackoff = time.Hour
			r := startRun(t, src)
			f.waitQueries(t, tt.queries)
			if tt.queries == 1 {
				pollUntil(t, func() bool { _, _, errs := r.snapshot(); return len(errs) == 1 })
			}
			start := time.Now()
			r.stop(t)
			if took := time.Since(start); took > time.Second {
				t.Errorf("Run took %v to return after cancel", took)
			}
		})
	}
}

// pollUntil polls cond for up to 5s.
func pollUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestConsulSourceFetch(t *testing.T) {
	leakcheck.Check(t)
	f := startFakeConsul(t,
		fakeReply{index: 12, entries: []*api.ServiceEntry{entry("mc-2", "n", 2, "passing"), entry("mc-1", "n", 1, "critical")}},
		fakeReply{status: http.StatusForbidden},
	)
	src := newTestSource(t, f.client, ConsulSourceOptions{})
	m, err := src.Fetch(t.Context())
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if m.Index != 12 || !slices.Equal(ids(m), []string{"mc-1", "mc-2"}) || m.Instances[0].Present || !m.Instances[1].Present {
		t.Errorf("Fetch = %+v", m)
	}
	if _, err := src.Fetch(t.Context()); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("Fetch of a failing Consul: %v, want the 403", err)
	}
	queries, _ := f.waitQueries(t, 2)
	for i, q := range queries {
		if q.Has("index") || q.Has("wait") {
			t.Errorf("Fetch query %d blocks: %v", i, q)
		}
	}
}

// waitAnswer waits up to timeout for an answer delivered after the first
// `after` answers that satisfies cond, and returns it with its delivery time.
func (r *runRecorder) waitAnswer(t *testing.T, after int, timeout time.Duration, what string, cond func(Membership) bool) (Membership, time.Time) {
	t.Helper()
	var found Membership
	var at time.Time
	testenv.Eventually(t, timeout, what, func() bool {
		answers, times, _ := r.snapshot()
		for i := after; i < len(answers); i++ {
			if cond(answers[i]) {
				found, at = answers[i], times[i]
				return true
			}
		}
		return false
	})
	return found, at
}

// count returns how many answers were delivered so far.
func (r *runRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.answers)
}

// instanceIs returns a condition: instance id is listed and matches want.
func instanceIs(id string, want func(Instance) bool) func(Membership) bool {
	return func(m Membership) bool {
		in, ok := m.Instance(id)
		return ok && want(in)
	}
}

func notListed(id string) func(Membership) bool {
	return func(m Membership) bool { _, ok := m.Instance(id); return !ok }
}

// maxDeliveryLatency is how soon after a catalog change Run must deliver it.
const maxDeliveryLatency = time.Second

func TestConsulSourceRealConsul(t *testing.T) {
	t.Parallel()
	c := testenv.StartConsul(t)
	m1, m2, m3 := testenv.StartMemcached(t), testenv.StartMemcached(t), testenv.StartMemcached(t)
	testenv.Register(t, c.Client, m1, testenv.Registration{ID: "mc-1", Tags: []string{"pool-x"}, Meta: map[string]string{"az": "a"}})
	testenv.Register(t, c.Client, m2, testenv.Registration{ID: "mc-2", Tags: []string{"pool-x"}})
	testenv.Register(t, c.Client, m3, testenv.Registration{ID: "mc-3", Tags: []string{"other"}})
	// An external node (registered in the catalog, no agent): its service
	// has no address of its own and the node carries the zone.
	extPort := testenv.FreePort(t)
	registerExternal := func(node, status string) {
		t.Helper()
		_, err := c.Client.Catalog().Register(&api.CatalogRegistration{
			Node:     node,
			Address:  "127.0.0.1",
			NodeMeta: map[string]string{"az": "c"},
			Service:  &api.AgentService{ID: "mc-4", Service: "memcached", Port: extPort},
			Check:    &api.AgentCheck{Node: node, CheckID: "mc-4-alive", Name: "alive", Status: status, ServiceID: "mc-4"},
		}, nil)
		if err != nil {
			t.Fatalf("registering external node %s: %v", node, err)
		}
	}
	registerExternal("ext-1", api.HealthPassing)

	src := newTestSource(t, c.Client, ConsulSourceOptions{MaxBackoff: 200 * time.Millisecond})
	r := startRun(t, src)

	want := []Instance{
		{Node: Node{ID: "mc-1", Addr: m1.Addr, AZ: "a"}, Present: true},
		{Node: Node{ID: "mc-2", Addr: m2.Addr, AZ: ""}, Present: true},
		{Node: Node{ID: "mc-3", Addr: m3.Addr, AZ: ""}, Present: true},
		{Node: Node{ID: "mc-4", Addr: "127.0.0.1:" + strconv.Itoa(extPort), AZ: "c"}, Present: true},
	}
	first, _ := r.waitAnswer(t, 0, 10*time.Second, "all four instances present", func(m Membership) bool {
		return slices.Equal(m.Instances, want)
	})
	if first.Index == 0 {
		t.Error("the answer carries no Consul index")
	}

	t.Run("tag filter", func(t *testing.T) {
		for tag, wantIDs := range map[string][]string{"pool-x": {"mc-1", "mc-2"}, "other": {"mc-3"}, "": {"mc-1", "mc-2", "mc-3", "mc-4"}, "none": nil} {
			m, err := newTestSource(t, c.Client, ConsulSourceOptions{Tag: tag}).Fetch(t.Context())
			if err != nil {
				t.Fatalf("Fetch with tag %q: %v", tag, err)
			}
			if !slices.Equal(ids(m), wantIDs) {
				t.Errorf("Fetch with tag %q lists %v, want %v", tag, ids(m), wantIDs)
			}
		}
		tagged := startRun(t, newTestSource(t, c.Client, ConsulSourceOptions{Tag: "other"}))
		tagged.waitAnswer(t, 0, 5*time.Second, "Run with tag other to list mc-3 only", func(m Membership) bool {
			return slices.Equal(ids(m), []string{"mc-3"})
		})
		tagged.stop(t)
	})

	t.Run("duplicate service ID", func(t *testing.T) {
		registerExternal("ext-0", api.HealthCritical) // sorts before ext-1, but fails its check
		defer func() {
			if _, err := c.Client.Catalog().Deregister(&api.CatalogDeregistration{Node: "ext-0"}, nil); err != nil {
				t.Fatalf("deregistering ext-0: %v", err)
			}
		}()
		var logs testenv.SyncBuffer
		dup := newTestSource(t, c.Client, ConsulSourceOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		m, err := dup.Fetch(t.Context())
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if !slices.Equal(m.Instances, want) {
			t.Errorf("with mc-4 also on a failing node, Fetch lists\n%+v\nwant\n%+v", m.Instances, want)
		}
		if !strings.Contains(logs.String(), "service ID registered on two Consul nodes") || !strings.Contains(logs.String(), "dropped_node=ext-0") {
			t.Errorf("no warning about the duplicate in the log: %q", logs.String())
		}
	})

	t.Run("failed check", func(t *testing.T) {
		n := r.count()
		m2.Kill(t)
		r.waitAnswer(t, n, 15*time.Second, "mc-2 absent after its memcached died", instanceIs("mc-2", func(in Instance) bool {
			return !in.Present && !in.Maintenance && in.Addr == m2.Addr
		}))
	})

	// measure runs change and returns how long after it Run delivered an
	// answer satisfying cond.
	measure := func(t *testing.T, what string, change func() error, cond func(Membership) bool) {
		t.Helper()
		n := r.count()
		start := time.Now()
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		_, at := r.waitAnswer(t, n, 10*time.Second, what, cond)
		latency := at.Sub(start)
		t.Logf("%s: delivered %v after the change", what, latency)
		if latency > maxDeliveryLatency {
			t.Errorf("%s: delivered %v after the change, want within %v", what, latency, maxDeliveryLatency)
		}
	}

	t.Run("service maintenance", func(t *testing.T) {
		measure(t, "mc-3 in maintenance", func() error {
			return c.Client.Agent().EnableServiceMaintenance("mc-3", "replacing the disk")
		}, instanceIs("mc-3", func(in Instance) bool { return in.Maintenance && !in.Present }))
		measure(t, "mc-3 out of maintenance", func() error {
			return c.Client.Agent().DisableServiceMaintenance("mc-3")
		}, instanceIs("mc-3", func(in Instance) bool { return !in.Maintenance && in.Present }))
	})

	t.Run("node maintenance", func(t *testing.T) {
		measure(t, "the agent's node in maintenance", func() error {
			return c.Client.Agent().EnableNodeMaintenance("rack move")
		}, func(m Membership) bool {
			ext, _ := m.Instance("mc-4")
			return instanceIs("mc-1", func(in Instance) bool { return in.Maintenance && !in.Present })(m) &&
				instanceIs("mc-3", func(in Instance) bool { return in.Maintenance })(m) &&
				!ext.Maintenance && ext.Present
		})
		measure(t, "the agent's node out of maintenance", func() error {
			return c.Client.Agent().DisableNodeMaintenance()
		}, instanceIs("mc-1", func(in Instance) bool { return !in.Maintenance && in.Present }))
	})

	t.Run("deregistered", func(t *testing.T) {
		measure(t, "mc-1 gone after deregistration", func() error {
			return c.Client.Agent().ServiceDeregister("mc-1")
		}, notListed("mc-1"))
		measure(t, "mc-4 gone with its external node", func() error {
			_, err := c.Client.Catalog().Deregister(&api.CatalogDeregistration{Node: "ext-1"}, nil)
			return err
		}, func(m Membership) bool { return slices.Equal(ids(m), []string{"mc-2", "mc-3"}) })
	})

	if _, _, errs := r.snapshot(); len(errs) != 0 {
		t.Errorf("Run reported errors against a healthy Consul: %v", errs)
	}
}

func TestConsulSourceSurvivesConsulRestart(t *testing.T) {
	t.Parallel()
	c := testenv.StartConsul(t)
	mc := testenv.StartMemcached(t)
	testenv.Register(t, c.Client, mc, testenv.Registration{ID: "mc-1"})
	// Raise the index of the service tables well above what a fresh dev
	// server starts with, so that the restart makes it go backwards.
	for i := range 30 {
		testenv.Register(t, c.Client, mc, testenv.Registration{ID: "mc-1", Meta: map[string]string{"round": strconv.Itoa(i)}})
	}
	r := startRun(t, newTestSource(t, c.Client, ConsulSourceOptions{MaxBackoff: 200 * time.Millisecond}))
	before, _ := r.waitAnswer(t, 0, 10*time.Second, "mc-1 present", instanceIs("mc-1", func(in Instance) bool { return in.Present }))

	c.Stop(t)
	testenv.Eventually(t, 10*time.Second, "onError while Consul is down", func() bool {
		_, _, errs := r.snapshot()
		return len(errs) > 0
	})
	n := r.count()
	c.Start(t)
	// A dev server starts empty: Run sees the empty catalog, then mc-1 again.
	r.waitAnswer(t, n, 10*time.Second, "the empty catalog of the restarted Consul", func(m Membership) bool {
		return len(m.Instances) == 0
	})
	n = r.count()
	start := time.Now()
	testenv.Register(t, c.Client, mc, testenv.Registration{ID: "mc-1"})
	after, at := r.waitAnswer(t, n, 10*time.Second, "mc-1 present after the restart", instanceIs("mc-1", func(in Instance) bool { return in.Present }))
	t.Logf("index %d before the restart, %d after; delivered %v after registering again", before.Index, after.Index, at.Sub(start))
	if after.Index >= before.Index {
		t.Logf("the index did not go backwards; the reset path was not exercised here")
	}
	if latency := at.Sub(start); latency > maxDeliveryLatency {
		t.Errorf("delivered %v after registering on the restarted Consul, want within %v (a stale WaitIndex would block up to WaitTime)", latency, maxDeliveryLatency)
	}
}
