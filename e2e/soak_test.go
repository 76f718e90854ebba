package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/testenv"
)

// The soak, and the outside test of issue 26: a pool deployed on a bed of
// hosts as the outside test had it (18 memcached in zones a, b and
// c, two to a host, each host with its Consul client agent; two replicas,
// each on a host with its agent; 8 slots, --warm-for 8s, --hold 5s), four
// clients writing, deleting and reading 400 shared keys through mcclient
// (one following Consul KV, three following both replicas over HTTP), their
// every operation checked for stale reads across generations
// (soak_client_test.go), and a seeded random series of faults, each undone
// before the pool settles and every invariant is checked: kills, pauses,
// cuts and the observer's faults, and the planned moves
// (soak_planned_test.go) of a drain and undrain of a zone, a replace, a
// maintenance move and a resize 8 → 16, each of which comes at least once
// in the first steps. SOAK_DURATION (default 60s; `make soak` runs 10m)
// bounds the series (the first planned moves are made even when it is
// over sooner), SOAK_SEED (default 11) replays it.

const (
	soakDefaultDuration = 60 * time.Second
	soakDefaultSeed     = 11
)

// soakOptions is the soak's pool.
var soakOptions = hostsOptions{nodes: 18, zones: 3, perHost: 2, replicas: 2, slots: 8, hold: soakHold.String(),
	flags: []string{"--warm-for", "8s"}}

// soak is one soak run.
type soak struct {
	t       *testing.T
	p       *hostsPool
	rng     *rand.Rand
	mon     *genMonitor
	checker *soakChecker
	clients *soakClients
	faults  map[string]int
	// planned counts the planned moves carried out by kind, refusals
	// those the API refused.
	planned, refusals map[string]int
	// schedule are the planned moves still to make in the first steps;
	// scheduled is set while the step makes one of them.
	schedule  []string
	scheduled bool
	resized   bool // the resize was made
}

// soakEffect is what one step's faults did.
type soakEffect struct {
	what    string
	touched map[string]soakTouch   // nodes whose memcached the clients lost
	rejoin  []*testenv.ConsulAgent // agents the server must join again
	// moves are the nodes a planned move may take slots from, anyMove
	// any node (a drain and its return).
	moves   map[string]bool
	anyMove bool
	// over reports whether the planned move's operation is over; after
	// runs once the pool settled.
	over  func() (bool, string)
	after func()
}

// soakEnv returns SOAK_DURATION and SOAK_SEED, or their defaults.
func soakEnv(t *testing.T) (time.Duration, uint64) {
	d, seed := soakDefaultDuration, uint64(soakDefaultSeed)
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a positive duration like 10m", v)
		}
	}
	if v := os.Getenv("SOAK_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SOAK_SEED=%q: want an unsigned integer", v)
		}
	}
	return d, seed
}

func TestSoak(t *testing.T) {
	duration, seed := soakEnv(t)
	t.Logf("soak seed %d, duration %v (replay: SOAK_SEED=%d SOAK_DURATION=%v)", seed, duration, seed, duration)
	p := newHostsPool(t, soakOptions)
	s := &soak{t: t, p: p, rng: rand.New(rand.NewPCG(seed, 0)), mon: &genMonitor{}, faults: map[string]int{},
		planned: map[string]int{}, refusals: map[string]int{}}
	s.checker = newSoakChecker(p)
	s.schedule = append([]string(nil), soakPlanned[:len(soakPlanned)-1]...)
	s.rng.Shuffle(len(s.schedule), func(i, j int) { s.schedule[i], s.schedule[j] = s.schedule[j], s.schedule[i] })
	s.schedule = append(s.schedule, soakPlanned[len(soakPlanned)-1])

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if s.clients != nil {
			s.clients.close()
			for _, v := range s.clients.finish() {
				s.checker.violate("at the end: %s", v)
			}
		}
		s.report()
	})
	cc, err := api.NewClient(&api.Config{Address: p.consul.HTTPAddr})
	if err != nil {
		t.Fatal(err)
	}
	s.clients = newSoakClients(t, ctx, &wg, soakClientsOptions{replicas: p.replicas, consul: cc, http: soakHTTPClients, seed: seed})
	wg.Go(func() { s.mon.run(ctx, cc) })

	start := time.Now()
	tries := map[string]int{}
	for i := 1; time.Since(start) < duration || len(s.schedule) > 0; i++ {
		at := time.Since(start).Round(time.Second)
		forced := ""
		if i%2 == 0 && len(s.schedule) > 0 {
			forced, s.schedule = s.schedule[0], s.schedule[1:]
		}
		s.scheduled = forced != ""
		e := s.step(forced)
		if forced != "" && s.refusals[forced] > tries[forced] {
			// Refused (the ceiling, no ready spare after a fault): again
			// after the next planned move, a few times.
			if tries[forced]++; tries[forced] < 5 {
				s.schedule = append(s.schedule, forced)
			} else {
				s.checker.violate("the planned %s was refused %d times", forced, tries[forced])
			}
		}
		var roles []string
		for id := range e.touched {
			if slot := s.checker.prev.SlotOf(id); slot >= 0 {
				roles = append(roles, fmt.Sprintf("%s held slot %d", id, slot))
			} else {
				roles = append(roles, id+" was a spare")
			}
		}
		sort.Strings(roles)
		if len(roles) > 0 {
			e.what += " (" + strings.Join(roles, ", ") + ")"
		}
		lead := s.settle(e)
		s.checker.check(e)
		if e.after != nil {
			e.after()
		}
		for _, v := range append(s.mon.take(), s.clients.takeViolations()...) {
			s.checker.violate("after %s: %s", e.what, v)
		}
		sm := s.checker.prev
		behind := ""
		if b := s.clients.takeBehind(); b != "" {
			behind = "; " + b
		}
		t.Logf("step %d at %v: %s; checked (generation %d, revision %d, %d slots, %s leads%s)", i, at, e.what, sm.Generation(), sm.Revision(), sm.NumSlots(), lead.name, behind)
	}
}

// settle waits until the pool has recovered from a fault: a planned
// move's operation over, the agents the fault cut off joined again, every
// memcached passing in Consul, one leader with a pass completed, every
// node reachable and serving with no flush pending, no slot announced, and
// every replica serving the stored map. It returns the leader.
func (s *soak) settle(e soakEffect) *replica {
	p := s.p
	if e.over != nil {
		var why string
		if !within(soakPlannedWait, func() (ok bool) { ok, why = e.over(); return ok }) {
			s.checker.violate("after %s: not over within %v: %s", e.what, soakPlannedWait, why)
		}
	}
	for _, a := range e.rejoin {
		p.rejoin(a)
	}
	testenv.Eventually(s.t, 60*time.Second, "every memcached passing in Consul", func() bool {
		entries, _, err := p.consul.Client.Health().Service("memcached", "", true, nil)
		return err == nil && len(entries) == len(p.nodes)
	})
	lead := p.leader(60 * time.Second)
	p.settle(lead, 60*time.Second)
	var why string
	if !within(30*time.Second, func() bool {
		sm := kvSlotMap(s.t, p.consul.Client, "default")
		if sm == nil {
			why = "no slot map in Consul KV"
			return false
		}
		if sm.AnyIncoming() {
			why = fmt.Sprintf("a slot is announced (generation %d, revision %d)", sm.Generation(), sm.Revision())
			return false
		}
		for _, r := range p.replicas {
			if code := r.ready(); code != http.StatusOK {
				why = fmt.Sprintf("%s: /readyz %d", r.name, code)
				return false
			}
			if got := r.served(); got == nil || !got.Equal(sm) {
				why = fmt.Sprintf("%s does not serve the stored map (generation %d)", r.name, sm.Generation())
				return false
			}
		}
		return true
	}) {
		s.checker.violate("after %s: the replicas were not all ready with the stored map within 30s: %s", e.what, why)
	}
	return lead
}

// report logs the soak's figures, in the test's log and on stdout (for
// `make soak`).
func (s *soak) report() {
	total := 0
	var kinds []string
	for k, n := range s.faults {
		total += n
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	var causes []string
	for k, n := range s.checker.causes {
		causes = append(causes, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(causes)
	var planned []string
	for _, k := range soakPlanned {
		planned = append(planned, fmt.Sprintf("%s %d (refused %d)", k, s.planned[k], s.refusals[k]))
	}
	lines := []string{
		fmt.Sprintf("soak seed: %d", mustSeed(s.t)),
		fmt.Sprintf("faults injected: %d (%s)", total, strings.Join(kinds, ", ")),
		fmt.Sprintf("planned moves carried out: %s", strings.Join(planned, ", ")),
		fmt.Sprintf("invariant checks: %d (after every fault; %d found a vacant slot)", s.checker.checks, s.checker.vacant),
		fmt.Sprintf("violations: %d", len(s.checker.problems)),
		fmt.Sprintf("flushes by cause: %s", strings.Join(causes, ", ")),
		fmt.Sprintf("slots taken from their holders: %d", s.mon.evicted()),
	}
	if s.clients != nil {
		lines = append(lines, s.clients.summary()...)
	}
	for _, l := range lines {
		s.t.Log(l)
		fmt.Println("SOAK " + l)
	}
}

func mustSeed(t *testing.T) uint64 {
	_, seed := soakEnv(t)
	return seed
}
