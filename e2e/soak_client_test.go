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
// outcome, the generation of that client's map when the call began, and
// its start and end on one monotonic clock, into one staleread.History:
// the stale-read check of the deterministic simulation (package dst),
// here over real hosts. A read is judged as it is recorded, every step's
// check takes the stale reads found since the last, and the whole history
// is judged again at the end.

const (
	// soakKeys is the size of the shared key space.
	soakKeys = 1000
	// soakHTTPClients is how many clients follow the map over HTTP, beside
	// the one that follows it in Consul KV.
	soakHTTPClients = 3
	// soakPause is each client's pause between two operations.
	soakPause = time.Millisecond
)

// soakApp is one application client.
type soakApp struct {
	name   string // "c1"
	via    string // how it follows the map
	c      *mcclient.Client
	rng    *rand.Rand // its goroutine only
	writes int        // its sets so far, numbering its values; its goroutine only

	// Guarded by soakClients.mu.
	gets, hits, sets, setErrs, noMap, deletes, deleteErrs uint64
}

// soakClients are the soak's clients and their history.
type soakClients struct {
	base time.Time // the clock every Start and End counts from
	keys []string
	apps []*soakApp

	mu       sync.Mutex
	hist     *staleread.History
	lastEnd  uint64
	ops      int // operations recorded
	spanned  int // operations during which the client's map changed
	late     int // reads of a value whose set did not succeed
	reported map[*staleread.Op]bool
	stale    int      // stale reads found
	bad      []string // violations since the last take
	// unwritten are reads of a value no recorded set had written when
	// they ended (its set still under way); judged again at the end.
	unwritten []*staleread.Op
}

// newSoakClients starts the clients: one following Consul KV, and
// soakHTTPClients following the replicas' GET /v1/slotmap, each starting
// on a different one. They run until ctx ends; wg waits for them.
func newSoakClients(t *testing.T, ctx context.Context, wg *sync.WaitGroup, replicas []*replica, cc *api.Client, seed uint64) *soakClients {
	s := &soakClients{base: time.Now(), hist: staleread.New(staleread.Options{WithinGeneration: true}), reported: map[*staleread.Op]bool{}}
	for i := range soakKeys {
		s.keys = append(s.keys, "soak-"+strconv.Itoa(i))
	}
	var sources []mcclient.Source
	var vias []string
	kv, err := cachenodes.NewSlotMapFollower(cachenodes.SlotMapFollowerOptions{
		Client: cc, Key: "mcrib/default/slotmap", WaitTime: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sources, vias = append(sources, kv), append(vias, "Consul KV")
	for i := range soakHTTPClients {
		var urls, names []string
		for j := range replicas {
			r := replicas[(i+j)%len(replicas)]
			urls, names = append(urls, "http://"+r.Addr), append(names, r.name)
		}
		f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URLs: urls, WaitTime: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		sources, vias = append(sources, f), append(vias, "HTTP ("+strings.Join(names, ", ")+")")
	}
	for i, src := range sources {
		c, err := mcclient.New(mcclient.Options{Source: src, Timeout: clientTimeout})
		if err != nil {
			t.Fatal(err)
		}
		a := &soakApp{name: "c" + strconv.Itoa(i+1), via: vias[i], c: c,
			rng: rand.New(rand.NewPCG(seed, seed^0x5eed+uint64(i)))}
		s.apps = append(s.apps, a)
		wg.Go(func() { c.Run(ctx) })
	}
	for _, a := range s.apps {
		testenv.Eventually(t, 10*time.Second, a.name+" following the map ("+a.via+")", func() bool { return a.c.SlotMap() != nil })
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

// now is the time since s.base, on the monotonic clock.
func (s *soakClients) now() uint64 { return uint64(time.Since(s.base)) }

func generation(m *cachenodes.SlotMap) uint64 {
	if m == nil {
		return 0
	}
	return m.Generation()
}

// do runs one random operation of a on a random key of the shared space
// and records it: half gets, a third sets, the rest deletes.
func (s *soakClients) do(a *soakApp) {
	key := s.keys[a.rng.IntN(len(s.keys))]
	o := &staleread.Op{Client: a.name, Key: key}
	x := a.rng.IntN(100)
	if x >= 50 && x < 83 {
		a.writes++
		o.Value = a.name + "-" + strconv.Itoa(a.writes) // unique over the history
	}
	start := s.now()
	before := a.c.SlotMap()
	var err error
	switch {
	case x < 50:
		o.Kind = staleread.Get
		var it *memcache.Item
		if it, err = a.c.Get(key); err == nil {
			o.Hit, o.Value = true, string(it.Value)
		}
	case x < 83:
		o.Kind = staleread.Set
		err = a.c.Set(&memcache.Item{Key: key, Value: []byte(o.Value)})
		o.OK = err == nil
	default:
		o.Kind = staleread.Delete
		err = a.c.Delete(key)
		// A miss is a delete of a key not there; queued for replay, or
		// any other error, is indeterminate.
		o.OK = err == nil || (errors.Is(err, memcache.ErrCacheMiss) &&
			!errors.Is(err, mcclient.ErrQueued) && !errors.Is(err, mcclient.ErrWarmSourceMissed))
	}
	after := a.c.SlotMap()
	s.record(a, o, start, generation(before), generation(after), err)
}

// record adds o, which began at start, to the history. The end is taken
// under s.mu, so that operations are added in the order they ended. The
// generation is that of the client's map before the call; when the map
// changed during the call, the call may have routed by either, so the
// operation is taken as indeterminate: a write as failed (its value is
// never stale and it replaces nothing), a read as not judged.
func (s *soakClients) record(a *soakApp, o *staleread.Op, start, genBefore, genAfter uint64, err error) {
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
		o.OK, o.Hit = false, false
	}
	s.hist.Add(o)
	s.ops++
	if o.Kind != staleread.Get || !o.Hit {
		return
	}
	switch w := s.hist.Writer(o.Value); {
	case w == nil:
		s.unwritten = append(s.unwritten, o)
	case !w.OK:
		s.late++
	}
	// Every write that ended before o began was added before o: judged
	// now, o is judged over all of them.
	if by := s.hist.ReplacedBy(o); by != nil {
		s.staleRead(o, by)
	}
}

// soakAt formats a position of the shared clock as seconds since the start.
func soakAt(ns uint64) string { return fmt.Sprintf("%.6fs", float64(ns)/1e9) }

// describe says what o did.
func describe(o *staleread.Op) string {
	what := map[staleread.Kind]string{staleread.Get: "get", staleread.Set: "set", staleread.Delete: "delete"}[o.Kind]
	if o.Kind == staleread.Set {
		what += fmt.Sprintf(" of %q", o.Value)
	}
	return fmt.Sprintf("%s's %s (generation %d, %s–%s)", o.Client, what, o.Gen, soakAt(o.Start), soakAt(o.End))
}

// staleRead records the stale read r, whose value by replaced; s.mu is
// held.
func (s *soakClients) staleRead(r, by *staleread.Op) {
	s.reported[r] = true
	s.stale++
	s.bad = append(s.bad, fmt.Sprintf("stale read: %s's get of %s (generation %d, %s–%s) returned %q, written by %s, which %s replaced before the get began",
		r.Client, r.Key, r.Gen, soakAt(r.Start), soakAt(r.End), r.Value, describe(s.hist.Writer(r.Value)), describe(by)))
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
// value that no set wrote.
func (s *soakClients) finish() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.hist.Check() {
		if v.Rule == staleread.Replaced && !s.reported[v.Read] {
			s.staleRead(v.Read, v.By)
		}
	}
	for _, r := range s.unwritten {
		if s.hist.Writer(r.Value) == nil {
			s.bad = append(s.bad, fmt.Sprintf("%s's get of %s (%s–%s) returned %q, a value no set wrote", r.Client, r.Key, soakAt(r.Start), soakAt(r.End), r.Value))
		}
	}
	s.unwritten = nil
	out := s.bad
	s.bad = nil
	return out
}

// close closes every client's connections.
func (s *soakClients) close() {
	for _, a := range s.apps {
		a.c.Close()
	}
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
		vias = append(vias, fmt.Sprintf("%s %s, %d ops", a.name, a.via, a.gets+a.sets+a.deletes))
	}
	rate := 0.0
	if gets > 0 {
		rate = float64(hits) / float64(gets)
	}
	return []string{
		fmt.Sprintf("clients: %d over %d shared keys (%s)", len(s.apps), soakKeys, strings.Join(vias, "; ")),
		fmt.Sprintf("client operations: %d gets (%d hits), hit rate %.3f; %d sets (%d failed, %d without a map); %d deletes (%d failed or queued)",
			gets, hits, rate, sets, setErrs, noMap, deletes, deleteErrs),
		fmt.Sprintf("history: %d operations recorded, %d reads checked, %d stale reads (%d operations spanned a map change and count as indeterminate; %d reads returned a value whose set failed)",
			s.ops, s.hist.Reads(), s.stale, s.spanned, s.late),
	}
}

// TestSoakClientsRecord holds the soak's recorder to the check it feeds:
// a read of a value that an acknowledged delete replaced before the read
// began is a stale read, found as it is recorded and again at the end; a
// write during which the client's map changed replaces nothing, and a
// read during one is not judged.
func TestSoakClientsRecord(t *testing.T) {
	s := &soakClients{base: time.Now(), hist: staleread.New(staleread.Options{WithinGeneration: true}), reported: map[*staleread.Op]bool{}}
	a, b := &soakApp{name: "c1"}, &soakApp{name: "c2"}
	op := func(app *soakApp, kind staleread.Kind, value string, hit, ok bool, genBefore, genAfter uint64) {
		s.record(app, &staleread.Op{Client: app.name, Kind: kind, Key: "k", Value: value, Hit: hit, OK: ok}, s.now(), genBefore, genAfter, nil)
	}
	op(a, staleread.Set, "c1-1", false, true, 3, 3)
	op(b, staleread.Get, "c1-1", true, false, 3, 3)
	op(a, staleread.Delete, "", false, true, 3, 3)
	if got := s.takeViolations(); len(got) != 0 {
		t.Fatalf("before the delete: %q, want no violation", got)
	}
	op(b, staleread.Get, "c1-1", true, false, 3, 3) // stale
	op(b, staleread.Get, "c1-1", true, false, 3, 4) // the map changed: not judged
	op(b, staleread.Get, "c1-1", true, false, 4, 4) // another generation
	got := s.takeViolations()
	if len(got) != 1 || !strings.Contains(got[0], "stale read: c2's get of k (generation 3") || !strings.Contains(got[0], "c1's delete") {
		t.Fatalf("violations %q, want one stale read of c2 replaced by c1's delete", got)
	}
	op(a, staleread.Set, "c1-2", false, true, 3, 4) // spanned: replaces nothing
	op(a, staleread.Delete, "", false, true, 4, 5)  // spanned: replaces nothing
	op(b, staleread.Get, "c1-2", true, false, 4, 4)
	op(b, staleread.Get, "c9-1", true, false, 4, 4) // no set wrote it
	if got := s.takeViolations(); len(got) != 0 {
		t.Fatalf("after the indeterminate writes: %q, want no violation", got)
	}
	end := s.finish()
	if len(end) != 1 || !strings.Contains(end[0], `returned "c9-1", a value no set wrote`) {
		t.Fatalf("at the end: %q, want the read of a value no set wrote", end)
	}
	if s.ops != 10 || s.hist.Reads() != 5 || s.stale != 1 || s.spanned != 3 {
		t.Fatalf("ops %d, reads checked %d, stale %d, spanned %d; want 10, 5, 1, 3", s.ops, s.hist.Reads(), s.stale, s.spanned)
	}
}
