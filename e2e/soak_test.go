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

// The soak: a pool deployed on a bed of hosts (nine memcached,
// three replicas, the Consul server and client agents), several clients
// writing, deleting and reading one key space through mcclient, their
// every operation checked for stale reads (soak_client_test.go), and a
// seeded random series of faults, each undone before the pool settles and
// every invariant is checked. SOAK_DURATION (default 60s; `make soak` runs 10m) bounds the
// series, SOAK_SEED (default 11) replays it.

const (
	soakDefaultDuration = 60 * time.Second
	soakDefaultSeed     = 11
)

// soak is one soak run.
type soak struct {
	t       *testing.T
	p       *hostsPool
	rng     *rand.Rand
	mon     *genMonitor
	checker *soakChecker
	clients *soakClients
	faults  map[string]int
}

// soakEffect is what one step's faults did.
type soakEffect struct {
	what    string
	touched map[string]soakTouch   // nodes whose memcached the clients lost
	rejoin  []*testenv.ConsulAgent // agents the server must join again
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
	p := newHostsPool(t, hostsOptions{nodes: 9, replicas: 3, slots: 8, hold: soakHold.String()})
	s := &soak{t: t, p: p, rng: rand.New(rand.NewPCG(seed, 0)), mon: &genMonitor{}, faults: map[string]int{}}
	s.checker = newSoakChecker(p)

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
	s.clients = newSoakClients(t, ctx, &wg, p.replicas, cc, seed)
	wg.Go(func() { s.mon.run(ctx, cc) })

	start := time.Now()
	for i := 1; time.Since(start) < duration; i++ {
		at := time.Since(start).Round(time.Second)
		e := s.step()
		var roles []string
		for id := range e.touched {
			if slot := s.checker.prev.SlotOf(id); slot >= 0 {
				roles = append(roles, fmt.Sprintf("%s held slot %d", id, slot))
			} else {
				roles = append(roles, id+" was a spare")
			}
		}
		if len(roles) > 0 {
			e.what += " (" + strings.Join(roles, ", ") + ")"
		}
		s.settle(e)
		s.checker.check(e.what, e.touched)
		for _, v := range append(s.mon.take(), s.clients.takeViolations()...) {
			s.checker.violate("after %s: %s", e.what, v)
		}
		t.Logf("step %d at %v: %s; checked (generation %d)", i, at, e.what, s.checker.prev.Generation())
	}
}

// settle waits until the pool has recovered from a fault: the agents the
// fault cut off joined again, every memcached passing in Consul, one
// leader with a pass completed, every node reachable and serving with no
// flush pending, and every replica serving the stored map.
func (s *soak) settle(e soakEffect) {
	p := s.p
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
	if !within(20*time.Second, func() bool {
		sm := kvSlotMap(s.t, p.consul.Client, "default")
		if sm == nil {
			why = "no slot map in Consul KV"
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
		s.checker.violate("after %s: the replicas were not all ready with the stored map within 20s: %s", e.what, why)
	}
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
	lines := []string{
		fmt.Sprintf("soak seed: %d", mustSeed(s.t)),
		fmt.Sprintf("faults injected: %d (%s)", total, strings.Join(kinds, ", ")),
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
