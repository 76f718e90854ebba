package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/staleread"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
)

// The soak's application clients: several mcclient.Clients, each
// following the slot map on its own as an application does (one through
// Consul KV, the others through mcrib's HTTP API over every replica, each
// starting on a different one), set, delete and get one shared key space
// concurrently. Every operation is recorded with its client, key, value,
// outcome, the generation of that client's map and whether that map was
// fresh when the call began, and its start and end on one monotonic clock,
// into one staleread.History judged by the rule across generations: a read
// by a client whose map was fresh is judged against every write of its
// key that a client with a fresh map completed, whichever generations
// either routed by, and a read of a value no client wrote for its key is a
// violation (the package doc of internal/staleread). A read is judged as
// it is recorded, every step's check takes the stale reads found since the
// last, and the whole history is judged again at the end.

const (
	// soakKeys is the size of the shared key space (the outside test of
	// issue 26 used 400 keys).
	soakKeys = 400
	// soakHTTPClients is how many clients follow the map over HTTP, beside
	// the one that follows it in Consul KV.
	soakHTTPClients = 3
	// soakPause is each client's pause between two operations.
	soakPause = time.Millisecond
)

// mapFresh reports whether c's slot map is fresh (docs/clients.md, "Fresh
// maps"): mcclient.Client.MapFresh where the client has it. A client
// without it (before the fresh maps of issue 26) counts every map as
// fresh: every read is judged and every write counts, the strictest
// reading of a history.
func mapFresh(c *mcclient.Client) bool {
	if f, ok := any(c).(interface{ MapFresh() bool }); ok {
		return f.MapFresh()
	}
	return true
}

// mapAge returns the age of c's slot map (mcclient.Client.MapAge), false
// when the client has no map or does not know its age.
func mapAge(c *mcclient.Client) (time.Duration, bool) {
	if f, ok := any(c).(interface {
		MapAge() (time.Duration, bool)
	}); ok {
		return f.MapAge()
	}
	return 0, false
}

// soakApp is one application client.
type soakApp struct {
	name string // "c1"
	via  string // how it follows the map
	// fresh reads whether the client's map is fresh as an operation
	// begins; mapFresh unless a test plants a fault.
	fresh func(*mcclient.Client) bool
	// build makes the client again, for a restart (nil: it cannot be
	// restarted).
	build func() (*mcclient.Client, error)

	mu       sync.Mutex
	c        *mcclient.Client   // the client now; guarded by mu
	stop     context.CancelFunc // ends c's Run; guarded by mu
	restarts int                // guarded by mu

	// getPct and setPct are the per cent of its operations that are gets and
	// sets; the rest are deletes.
	getPct, setPct int
	rng            *rand.Rand // its goroutine only
	writes         int        // its sets so far, numbering its values; its goroutine only

	// Guarded by soakClients.mu.
	gets, hits, sets, setErrs, noMap, deletes, deleteErrs, stale uint64
}

// client returns the application's client now.
func (a *soakApp) client() *mcclient.Client {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.c
}

// soakClientsOptions says which clients newSoakClients starts.
type soakClientsOptions struct {
	// replicas are the mcrib replicas the HTTP clients follow.
	replicas []*replica
	// consul, when not nil, is the Consul agent a client follows the map
	// in KV through.
	consul *api.Client
	// http is how many clients follow the replicas' GET /v1/slotmap.
	http int
	// keys is the size of the shared key space; zero means soakKeys.
	keys int
	// readOnly has the KV and HTTP clients only get.
	readOnly bool
	// keep keeps every operation recorded, in soakClients.kept.
	keep bool
	seed uint64
	// extra are further clients, already built (a planted fault's);
	// their fields name, via, c, fresh and the mix are set, build is nil.
	extra []*soakApp
}

// soakClients are the soak's clients and their history.
type soakClients struct {
	base time.Time // the clock every Start and End counts from
	keys []string
	apps []*soakApp
	ctx  context.Context // the clients run until it ends
	wg   *sync.WaitGroup // waits for their goroutines

	mu       sync.Mutex
	hist     *staleread.History
	lastEnd  uint64
	ops      int // operations recorded
	spanned  int // operations during which the client's map changed
	late     int // reads of a value whose set did not succeed
	notFresh int // operations begun with a map that was not fresh
	reported map[*staleread.Op]bool
	kept     []*staleread.Op // every operation, with soakClientsOptions.keep
	keep     bool
	// firstAt is when a call first began on each generation; behind
	// counts the calls begun on an older generation than one another
	// client had begun a call on, and maxBehind the longest such lag: the
	// window of the cross-generation class.
	firstAt   map[uint64]uint64
	topGen    uint64
	behind    int
	maxBehind uint64
	// stepBehind and stepMaxBehind are behind and maxBehind since the
	// last takeBehind.
	stepBehind    int
	stepMaxBehind uint64
	stale         int      // stale reads found
	bad           []string // violations since the last take
}

// newSoakClients starts the clients o describes: with o.consul one
// following Consul KV, and o.http following the replicas' GET /v1/slotmap,
// each over every replica and starting on a different one, each doing
// half gets, a third sets and the rest deletes; then o.extra. They run
// until ctx ends; wg waits for them.
func newSoakClients(t *testing.T, ctx context.Context, wg *sync.WaitGroup, o soakClientsOptions) *soakClients {
	s := newSoakHistory()
	s.keep = o.keep
	if o.keys == 0 {
		o.keys = soakKeys
	}
	for i := range o.keys {
		s.keys = append(s.keys, "soak-"+strconv.Itoa(i))
	}
	s.ctx, s.wg = ctx, wg
	var sources []func() (mcclient.Source, error)
	var vias []string
	if o.consul != nil {
		sources = append(sources, func() (mcclient.Source, error) {
			return cachenodes.NewSlotMapFollower(cachenodes.SlotMapFollowerOptions{
				Client: o.consul, Key: "mcrib/default/slotmap", WaitTime: 5 * time.Second})
		})
		vias = append(vias, "Consul KV")
	}
	for i := range o.http {
		var urls, names []string
		for j := range o.replicas {
			r := o.replicas[(i+j)%len(o.replicas)]
			urls, names = append(urls, "http://"+r.Addr), append(names, r.name)
		}
		sources = append(sources, func() (mcclient.Source, error) {
			return mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URLs: urls, WaitTime: 5 * time.Second})
		})
		vias = append(vias, "HTTP ("+strings.Join(names, ", ")+")")
	}
	for i, src := range sources {
		build := func() (*mcclient.Client, error) {
			f, err := src()
			if err != nil {
				return nil, err
			}
			return mcclient.New(mcclient.Options{Source: f, Timeout: clientTimeout})
		}
		c, err := build()
		if err != nil {
			t.Fatal(err)
		}
		a := &soakApp{name: "c" + strconv.Itoa(i+1), via: vias[i], c: c, fresh: mapFresh, build: build,
			getPct: 50, setPct: 33}
		if o.readOnly {
			a.getPct, a.setPct = 100, 0
		}
		s.apps = append(s.apps, a)
	}
	s.apps = append(s.apps, o.extra...)
	for i, a := range s.apps {
		a.rng = rand.New(rand.NewPCG(o.seed, o.seed^0x5eed+uint64(i)))
		runCtx, stop := context.WithCancel(ctx)
		a.stop = stop
		c := a.c
		wg.Go(func() { c.Run(runCtx) })
	}
	for _, a := range s.apps {
		testenv.Eventually(t, 10*time.Second, a.name+" following the map ("+a.via+")", func() bool { return a.client().SlotMap() != nil })
	}
	for _, a := range s.apps {
		wg.Go(func() {
			for ctx.Err() == nil {
				s.do(a)
				time.Sleep(soakPause)
			}
		})
	}
	return s
}

// newSoakHistory returns clients with no app yet and an empty history,
// judged across generations.
func newSoakHistory() *soakClients {
	return &soakClients{base: time.Now(), hist: staleread.New(staleread.Options{}), reported: map[*staleread.Op]bool{}}
}

// now is the time since s.base, on the monotonic clock.
func (s *soakClients) now() uint64 { return uint64(time.Since(s.base)) }

func generation(m *cachenodes.SlotMap) uint64 {
	if m == nil {
		return 0
	}
	return m.Generation()
}

// do runs one random operation of a on a random key of the shared space
// and records it: a.getPct gets, a.setPct sets, the rest deletes.
func (s *soakClients) do(a *soakApp) {
	key := s.keys[a.rng.IntN(len(s.keys))]
	o := &staleread.Op{Client: a.name, Key: key}
	x := a.rng.IntN(100)
	isGet, isSet := x < a.getPct, x >= a.getPct && x < a.getPct+a.setPct
	if isSet {
		a.writes++
		o.Value = a.name + "-" + strconv.Itoa(a.writes) // unique over the history
	}
	c := a.client()
	start := s.now()
	before := c.SlotMap()
	o.Fresh = a.fresh(c)
	age, aged := mapAge(c)
	var err error
	switch {
	case isGet:
		o.Kind = staleread.Get
		var it *memcache.Item
		if it, err = c.Get(key); err == nil {
			o.Hit, o.Value = true, string(it.Value)
		}
	case isSet:
		o.Kind = staleread.Set
		err = c.Set(&memcache.Item{Key: key, Value: []byte(o.Value)})
		o.OK = err == nil
	default:
		o.Kind = staleread.Delete
		err = c.Delete(key)
		// A miss is a delete of a key not there; queued for replay, or
		// any other error, is indeterminate.
		o.OK = err == nil || (errors.Is(err, memcache.ErrCacheMiss) &&
			!errors.Is(err, mcclient.ErrQueued) && !errors.Is(err, mcclient.ErrWarmSourceMissed))
	}
	after := c.SlotMap()
	s.record(a, o, start, generation(before), generation(after), soakMapAge{age, aged}, err)
}

// soakMapAge is the age of a client's map when a call began, for messages.
type soakMapAge struct {
	age   time.Duration
	known bool
}

func (m soakMapAge) String() string {
	if !m.known {
		return "map age unknown"
	}
	return "map age " + m.age.Round(time.Millisecond).String()
}

// record adds o, which began at start, to the history. The end is taken
// under s.mu, so that operations are added in the order they ended. The
// generation is that of the client's map before the call; a call during
// which the client took another map (genAfter) routed by the one it
// loaded as it began, fresh or not as o.Fresh says, and is judged like
// any other: the rule across generations does not care which map a call
// routed by, only whether it was fresh.
func (s *soakClients) record(a *soakApp, o *staleread.Op, start, genBefore, genAfter uint64, age soakMapAge, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := max(s.now(), s.lastEnd+1, start+1)
	s.lastEnd = end
	o.Start, o.End, o.Gen = start, end, genBefore
	switch o.Kind {
	case staleread.Get:
		a.gets++
		if o.Hit {
			a.hits++
		}
	case staleread.Set:
		a.sets++
		if !o.OK {
			a.setErrs++
		}
		if errors.Is(err, mcclient.ErrNoSlotMap) {
			a.noMap++
		}
	case staleread.Delete:
		a.deletes++
		if !o.OK {
			a.deleteErrs++
		}
	}
	if genAfter != genBefore {
		s.spanned++
	}
	if s.firstAt == nil {
		s.firstAt = map[uint64]uint64{}
	}
	if _, ok := s.firstAt[genBefore]; !ok {
		s.firstAt[genBefore] = start
	}
	if genBefore > s.topGen {
		s.topGen = genBefore
	} else if genBefore < s.topGen && genBefore > 0 {
		s.behind++
		s.stepBehind++
		if first := s.firstAt[s.topGen]; start > first {
			s.maxBehind = max(s.maxBehind, start-first)
			s.stepMaxBehind = max(s.stepMaxBehind, start-first)
		}
	}
	if !o.Fresh {
		s.notFresh++
	}
	s.hist.Add(o)
	s.ops++
	if s.keep {
		s.kept = append(s.kept, o)
	}
	if o.Kind != staleread.Get || !o.Hit {
		return
	}
	if w := s.hist.Writer(o.Value); w != nil && !w.OK {
		s.late++
	}
	// Every write that ended before o began was added before o: judged
	// now, o is judged over all of them. A value not written yet waits
	// for the end (its set may still be under way).
	if v, bad := s.hist.Judge(o); bad && v.Rule == staleread.Replaced {
		s.staleRead(a, v, age)
	}
}

// soakAt formats a position of the shared clock as seconds since the start.
func soakAt(ns uint64) string { return fmt.Sprintf("%.6fs", float64(ns)/1e9) }

// describe says what o did.
func describe(o *staleread.Op) string {
	what := o.Kind.String()
	if o.Kind == staleread.Set {
		what += fmt.Sprintf(" of %q", o.Value)
	}
	return fmt.Sprintf("%s's %s (generation %d, fresh %v, %s–%s)", o.Client, what, o.Gen, o.Fresh, soakAt(o.Start), soakAt(o.End))
}

// staleRead records the stale read v (of app a, when known, whose map
// had age when the read began); s.mu is held.
func (s *soakClients) staleRead(a *soakApp, v staleread.Violation, age soakMapAge) {
	r := v.Read
	s.reported[r] = true
	s.stale++
	if a != nil {
		a.stale++
	}
	where := ""
	if age.known {
		where = ", " + age.String()
	}
	s.bad = append(s.bad, fmt.Sprintf("stale read: %s's get of %s (generation %d, fresh %v%s, %s–%s) returned %q, written by %s, which %s replaced before the get began",
		r.Client, r.Key, r.Gen, r.Fresh, where, soakAt(r.Start), soakAt(r.End), r.Value, describe(s.hist.Writer(r.Value)), describe(v.By)))
}

// takeBehind describes the calls begun on an older generation than
// another client's since the last call, or "" when there was none.
func (s *soakClients) takeBehind() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, lag := s.stepBehind, s.stepMaxBehind
	s.stepBehind, s.stepMaxBehind = 0, 0
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d calls behind another client's generation, by up to %v", n, time.Duration(lag).Round(time.Millisecond))
}

// startSoakClients starts the clients of o, running until stop. The first
// call of stop stops and closes them and returns the violations not yet
// taken (finish); a later call returns nil.
func startSoakClients(t *testing.T, o soakClientsOptions) (clients *soakClients, stop func() []string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	clients = newSoakClients(t, ctx, &wg, o)
	stopped := false
	return clients, func() []string {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		wg.Wait()
		clients.close()
		return clients.finish()
	}
}

// takeViolations returns the violations found since the last call.
func (s *soakClients) takeViolations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.bad
	s.bad = nil
	return out
}

// finish judges the whole history again, once every client has stopped,
// and returns the violations not yet taken: stale reads, and reads of a
// value that no client's set of that key wrote.
func (s *soakClients) finish() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	apps := map[string]*soakApp{}
	for _, a := range s.apps {
		apps[a.name] = a
	}
	for _, v := range s.hist.Check() {
		r := v.Read
		switch {
		case v.Rule == staleread.Replaced && !s.reported[r]:
			s.staleRead(apps[r.Client], v, soakMapAge{})
		case v.Rule == staleread.Unwritten:
			s.reported[r] = true
			s.bad = append(s.bad, fmt.Sprintf("%s's get of %s (generation %d, fresh %v, %s–%s) returned %q, %s",
				r.Client, r.Key, r.Gen, r.Fresh, soakAt(r.Start), soakAt(r.End), r.Value, unwrittenWhy(v)))
		}
	}
	out := s.bad
	s.bad = nil
	return out
}

// unwrittenWhy says why v's value was no client's for its key.
func unwrittenWhy(v staleread.Violation) string {
	switch {
	case v.By == nil && cachenodes.IsTombstone(&memcache.Item{Key: v.Read.Key, Value: []byte(v.Read.Value)}):
		return "a tombstone read as a value"
	case v.By == nil:
		return "a value no set wrote"
	case v.By.Key != v.Read.Key:
		return fmt.Sprintf("a value that %s wrote for %s", describe(v.By), v.By.Key)
	default:
		return fmt.Sprintf("a value that %s began writing only after the get ended", describe(v.By))
	}
}

// close closes every client's connections.
func (s *soakClients) close() {
	for _, a := range s.apps {
		a.client().Close()
	}
}

// restart restarts a's client, as a deploy restarts an application
// process: a new mcclient.Client from the same options (an HTTP follower
// starts again on its first replica), taking over once it has a map; the
// old one is closed, its replay queues lost (a queued delete is recorded
// as failed, so nothing is judged by it). It returns an error when the
// new client took no map within 10 s (the old one then stays).
func (s *soakClients) restart(a *soakApp) error {
	c, err := a.build()
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(s.ctx)
	s.wg.Go(func() { c.Run(runCtx) })
	if !within(10*time.Second, func() bool { return c.SlotMap() != nil }) {
		stop()
		c.Close()
		return fmt.Errorf("%s restarted took no map within 10s", a.name)
	}
	a.mu.Lock()
	old, oldStop := a.c, a.stop
	a.c, a.stop = c, stop
	a.restarts++
	a.mu.Unlock()
	time.Sleep(200 * time.Millisecond) // the call under way on the old client ends
	oldStop()
	old.Close()
	return nil
}

// summary describes the clients, their operations and the history.
func (s *soakClients) summary() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gets, hits, sets, setErrs, noMap, deletes, deleteErrs uint64
	var vias []string
	for _, a := range s.apps {
		gets, hits, sets, setErrs, noMap = gets+a.gets, hits+a.hits, sets+a.sets, setErrs+a.setErrs, noMap+a.noMap
		deletes, deleteErrs = deletes+a.deletes, deleteErrs+a.deleteErrs
		a.mu.Lock()
		restarts := a.restarts
		a.mu.Unlock()
		vias = append(vias, fmt.Sprintf("%s %s, %d ops, %d restarts, %d stale reads", a.name, a.via, a.gets+a.sets+a.deletes, restarts, a.stale))
	}
	rate := 0.0
	if gets > 0 {
		rate = float64(hits) / float64(gets)
	}
	freshness := "every map counted fresh (this mcclient has no MapFresh)"
	if len(s.apps) > 0 {
		if _, ok := any(s.apps[0].client()).(interface{ MapFresh() bool }); ok {
			freshness = "freshness from mcclient.Client.MapFresh"
		}
	}
	return []string{
		fmt.Sprintf("clients: %d over %d shared keys (%s)", len(s.apps), len(s.keys), strings.Join(vias, "; ")),
		fmt.Sprintf("client operations: %d gets (%d hits), hit rate %.3f; %d sets (%d failed, %d without a map); %d deletes (%d failed or queued)",
			gets, hits, rate, sets, setErrs, noMap, deletes, deleteErrs),
		fmt.Sprintf("history: %d operations recorded, %d reads checked across generations (of %d that returned a value), %d stale reads; %d operations begun on a map not fresh (%s), %d spanned a map change; %d reads returned a value whose set failed",
			s.ops, s.hist.JudgedReads(), s.hist.Reads(), s.stale, s.notFresh, freshness, s.spanned, s.late),
		fmt.Sprintf("generations: %d operations began on an older generation than another client already routed by, at most %v after that one's first",
			s.behind, time.Duration(s.maxBehind).Round(time.Millisecond)),
	}
}

// TestSoakClientsRecord holds the soak's recorder to the check it feeds,
// across generations: a read of a value that an acknowledged delete
// replaced before the read began is a stale read, found as it is recorded
// and again at the end, whichever generations the two routed by and
// whether or not the reader's map changed during the call; a read by a
// client whose map was not fresh is not judged, and a write by one
// replaces nothing; a read of a value no client wrote for the key (a
// tombstone among them) is a violation at the end.
func TestSoakClientsRecord(t *testing.T) {
	s := newSoakHistory()
	a, b := &soakApp{name: "c1"}, &soakApp{name: "c2"}
	s.apps = []*soakApp{a, b}
	op := func(app *soakApp, kind staleread.Kind, value string, hit, ok, fresh bool, genBefore, genAfter uint64) {
		s.record(app, &staleread.Op{Client: app.name, Kind: kind, Key: "k", Value: value, Hit: hit, OK: ok, Fresh: fresh},
			s.now(), genBefore, genAfter, soakMapAge{time.Second, true}, nil)
	}
	op(a, staleread.Set, "c1-1", false, true, true, 3, 3)
	op(b, staleread.Get, "c1-1", true, false, true, 3, 3)
	op(a, staleread.Delete, "", false, true, true, 3, 3)
	if got := s.takeViolations(); len(got) != 0 {
		t.Fatalf("before the delete: %q, want no violation", got)
	}
	op(b, staleread.Get, "c1-1", true, false, true, 4, 4)  // another generation: stale
	op(b, staleread.Get, "c1-1", true, false, true, 3, 4)  // the map changed during the call: stale
	op(b, staleread.Get, "c1-1", true, false, false, 4, 4) // a map not fresh: not judged
	got := s.takeViolations()
	if len(got) != 2 || !strings.Contains(got[0], "stale read: c2's get of k (generation 4, fresh true, map age 1s") ||
		!strings.Contains(got[0], "c1's delete (generation 3, fresh true") || !strings.Contains(got[1], "c2's get of k (generation 3") {
		t.Fatalf("violations %q, want two stale reads of c2 replaced by c1's delete", got)
	}
	op(a, staleread.Set, "c1-2", false, true, true, 4, 4)
	op(a, staleread.Delete, "", false, true, false, 4, 4) // a map not fresh: replaces nothing
	op(b, staleread.Get, "c1-2", true, false, true, 5, 5)
	op(b, staleread.Get, "c9-1", true, false, true, 5, 5)                     // no set wrote it
	op(b, staleread.Get, cachenodes.TombstoneValue, true, false, false, 5, 5) // a tombstone, read by a stale map
	if got := s.takeViolations(); len(got) != 0 {
		t.Fatalf("after the stale delete: %q, want no violation (the unwritten values are judged at the end)", got)
	}
	end := s.finish()
	if len(end) != 2 || !strings.Contains(end[0], `returned "c9-1", a value no set wrote`) ||
		!strings.Contains(end[1], `returned "mcrib-tombstone", a tombstone read as a value`) {
		t.Fatalf("at the end: %q, want the reads of a value no set wrote and of a tombstone", end)
	}
	if s.ops != 11 || s.hist.Reads() != 7 || s.hist.JudgedReads() != 5 || s.stale != 2 || b.stale != 2 || s.spanned != 1 || s.notFresh != 3 {
		t.Fatalf("ops %d, reads %d, judged %d, stale %d (c2 %d), spanned %d, not fresh %d; want 11, 7, 5, 2 (2), 1, 3",
			s.ops, s.hist.Reads(), s.hist.JudgedReads(), s.stale, b.stale, s.spanned, s.notFresh)
	}
}
