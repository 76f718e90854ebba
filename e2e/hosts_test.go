package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// The tests across hosts: mcrib deployed as in production, on a
// bed of network namespaces (hosts_harness_test.go), with faults on mcrib's
// own side that must never cool the fleet (invariants 7 and 8, docs/invariants.md).
// Each test has a bed of its own, so they run in parallel.

// TestHostsReplicaCutOff cuts the only replica's host off for 3 s: every
// probe fails at once, a fault of the observer. Nothing is flushed or
// replaced, a key written before is still there, and the replica is ready
// again within a few seconds of the link returning.
func TestHostsReplicaCutOff(t *testing.T) {
	t.Parallel()
	p := newHostsPool(t, hostsOptions{nodes: 5, replicas: 1, slots: 4, hold: "1s"})
	r := p.replicas[0]
	before := p.filled()
	items := fill(t, before, 40)
	flushes := p.flushes()

	r.host.Cut(t)
	time.Sleep(3 * time.Second) // the fault's duration
	r.host.Heal(t)
	healed := time.Now()
	testenv.Eventually(t, 5*time.Second, "/readyz 200 within 5 s of the link returning", func() bool {
		return r.ready() == 200
	})
	t.Logf("ready %v after the link returned", time.Since(healed).Round(time.Millisecond))
	p.rejoin(r.agent)
	p.leader(20 * time.Second) // a session may have been lost with the link
	p.settle(r, 10*time.Second)
	steady(t, 3*time.Second, "after the replica's host was cut off", func() string {
		return p.flushesRose(flushes) + p.sameMap(before)
	})
	if n := missing(t, before, items); n != 0 {
		t.Fatalf("%d of %d keys written before the cut are gone", n, len(items))
	}
}

// TestHostsPartialPartition drops the traffic from the leader's host to one
// slot holder for more than twice --hold while the two other replicas still
// reach it: the vote says it answers, so nothing is flushed or replaced.
// Then the node really dies: its slot goes to the spare after --hold,
// exactly once.
func TestHostsPartialPartition(t *testing.T) {
	t.Parallel()
	const hold = 2 * time.Second
	p := newHostsPool(t, hostsOptions{nodes: 5, replicas: 3, slots: 4, hold: hold.String()})
	before := p.filled()
	lead := p.leader(10 * time.Second)
	victim := p.byID[before.Slot(0).ID]
	flushes := p.flushes()

	lead.host.Drop(t, victim.host.Addr)
	unchanged := func() string { return p.flushesRose(flushes) + p.sameMap(before) }
	if bad := holds(2*hold+time.Second, unchanged); bad != "" {
		t.Errorf("while the leader alone could not reach %s: %s", victim.id, bad)
	}
	lead.host.Undrop(t, victim.host.Addr)
	p.settle(lead, 10*time.Second)
	if bad := holds(3*time.Second, unchanged); bad != "" {
		t.Errorf("after the partial partition healed: %s", bad)
	}

	// The node really dies. (A fresh baseline, so that this part is judged
	// on its own when the first failed.)
	flushes, before = p.flushes(), p.slotMap()
	if before.NumSpares() != 1 {
		t.Fatalf("%d spares, want 1", before.NumSpares())
	}
	spare := before.Spare(0).ID
	delete(flushes, victim.id)
	killed := time.Now()
	victim.mc.Kill(t)
	after := before
	testenv.Eventually(t, 20*time.Second, "slot 0 replaced after "+victim.id+" died", func() bool {
		if sm := kvSlotMap(t, p.consul.Client, "default"); sm != nil && sm.Slot(0).ID != victim.id {
			after = sm
			return true
		}
		return false
	})
	if waited := time.Since(killed); waited < hold {
		t.Fatalf("slot 0 was replaced %v after the kill, before --hold %v", waited, hold)
	}
	if after.Slot(0).ID != spare || after.Generation() != before.Generation()+1 {
		t.Fatalf("slot 0 went to %q at generation %d; want the spare %s at generation %d", after.Slot(0).ID, after.Generation(), spare, before.Generation()+1)
	}
	for i := 1; i < before.NumSlots(); i++ {
		if after.Slot(i).ID != before.Slot(i).ID {
			t.Fatalf("slot %d moved from %s to %s", i, before.Slot(i).ID, after.Slot(i).ID)
		}
	}
	flushes[spare]++ // flushed once, as part of its placement
	steady(t, 2*hold, "after the replacement (exactly one)", func() string {
		return p.flushesRose(flushes) + p.sameMap(after)
	})
}

// TestHostsPausedHolders pauses half the slot holders (SIGSTOP) for 3 s:
// more than --max-absent-fraction unreachable at once is the observer's
// fault, so nothing is flushed and the status shows the automatic freeze
// while it lasts. A single paused holder is still flushed once on return.
func TestHostsPausedHolders(t *testing.T) {
	t.Parallel()
	p := newHostsPool(t, hostsOptions{nodes: 5, replicas: 1, slots: 4, hold: "2s",
		flags: []string{"--flush-after-unreachable", "0s"}})
	r := p.replicas[0]
	before := p.filled()
	items := fill(t, before, 40)
	flushes := p.flushes()

	half := []*hostNode{p.byID[before.Slot(0).ID], p.byID[before.Slot(2).ID]}
	for _, n := range half {
		n.mc.Pause(t)
	}
	// Paused for 3 s, or longer until the replica shows the freeze (at
	// most 8 s), polling the status all along.
	paused := time.Now()
	var sawUnreachable, sawFreeze bool
	var last mcribapi.Status
	within(8*time.Second, func() bool {
		if st, err := r.api.status(); err == nil {
			last = st
			a, _ := nodeStatus(st, half[0].id)
			b, _ := nodeStatus(st, half[1].id)
			sawUnreachable = sawUnreachable || (!a.Reachable && !b.Reachable)
			sawFreeze = sawFreeze || (st.AutoFrozen && strings.Contains(st.AutoFreezeReason, "unreachable"))
		}
		return sawFreeze && time.Since(paused) >= 3*time.Second
	})
	for _, n := range half {
		n.mc.Resume(t)
	}
	if !sawFreeze {
		t.Errorf("half the slot holders paused for %v: the status never showed an automatic freeze naming the unreachable nodes (both seen unreachable: %v; last auto_frozen %v, reason %q)",
			time.Since(paused).Round(time.Millisecond), sawUnreachable, last.AutoFrozen, last.AutoFreezeReason)
	} else {
		t.Logf("automatic freeze while half the holders were paused: %s", last.AutoFreezeReason)
	}
	p.settle(r, 10*time.Second)
	if bad := holds(3*time.Second, func() string { return p.flushesRose(flushes) + p.sameMap(before) }); bad != "" {
		t.Errorf("after half the slot holders returned: %s", bad)
	} else if n := missing(t, before, items); n != 0 {
		t.Errorf("%d of %d keys written before the pause are gone", n, len(items))
	}

	// One paused holder is the node's fault: flushed once when it returns.
	// (A fresh baseline, so that this part is judged on its own when the
	// first failed.)
	flushes, before = p.flushes(), p.slotMap()
	one := p.byID[before.Slot(1).ID]
	one.mc.Pause(t)
	paused = time.Now()
	testenv.Eventually(t, 10*time.Second, one.id+" counted unreachable", func() bool {
		st, err := r.api.status()
		n, _ := nodeStatus(st, one.id)
		return err == nil && !n.Reachable
	})
	time.Sleep(time.Until(paused.Add(3 * time.Second))) // the rest of the fault's 3 s
	one.mc.Resume(t)
	flushes[one.id]++
	testenv.Eventually(t, 10*time.Second, one.id+" flushed on its return", func() bool {
		return mustStats(t, one.mc.Addr).CmdFlush == flushes[one.id]
	})
	steady(t, 3*time.Second, "after a single holder returned (flushed exactly once)", func() string {
		return p.flushesRose(flushes) + p.sameMap(before)
	})
}

// TestHostsBootLimitPoolWide runs three replicas on three hosts with a
// manual limit of 20 boots/s, burst 20, and applications calling all three
// for 5 s: the pool admits at most 20 × 5 + 20 (+10% for timing), and each
// follower names the leader by its routable address. After kill -9 of the
// leader the two survivors still stay within the pool's limit.
func TestHostsBootLimitPoolWide(t *testing.T) {
	t.Parallel()
	const limit, burst, window = 20, 20, 5 * time.Second
	p := newHostsPool(t, hostsOptions{nodes: 2, replicas: 3, slots: 2, hold: "30s"})
	lead := p.leader(10 * time.Second)
	body := fmt.Sprintf(`{"mode":"manual","limit":%d,"burst":%d}`, limit, burst)
	if code, resp := lead.api.do("PUT", "/v1/ratelimit", body, token); code != 200 {
		t.Fatalf("PUT /v1/ratelimit on the leader: %d %s", code, resp)
	}
	for _, r := range p.replicas {
		testenv.Eventually(t, 10*time.Second, r.name+" holds the manual limit", func() bool {
			code, resp := r.api.get("/v1/ratelimit")
			return code == 200 && strings.Contains(string(resp), `"mode":"manual"`) &&
				strings.Contains(string(resp), fmt.Sprintf(`"limit":%d`, limit)) && strings.Contains(string(resp), fmt.Sprintf(`"burst":%d`, burst))
		})
	}
	want := lead.host.Addr + ":7070"
	for _, r := range p.followers(lead) {
		var got string
		if !within(5*time.Second, func() bool {
			st, err := r.api.status()
			got = st.LeaderID
			return err == nil && got == want
		}) {
			t.Errorf("follower %s: leader_id %q, want the leader's routable address %q", r.name, got, want)
		}
	}

	check := func(what string, res bootResult) {
		t.Helper()
		secs := res.elapsed.Seconds()
		most := (limit*secs + burst) * 1.1
		t.Logf("%s: %d admitted, %d refused, %d other in %.2fs (at most %.0f)", what, res.admitted, res.refused, res.other, secs, most)
		if float64(res.admitted) > most {
			t.Errorf("%s: %d boots admitted in %.2fs; one pool-wide limit allows %d × %.2f + %d = %.0f (+10%%: %.0f)",
				what, res.admitted, secs, limit, secs, burst, limit*secs+burst, most)
		}
		// A pool that refuses (nearly) everything would pass the bound above.
		if least := limit * secs / 4; float64(res.admitted) < least {
			t.Errorf("%s: only %d boots admitted in %.2fs, want at least %.0f (a quarter of the limit)", what, res.admitted, secs, least)
		}
		if res.other > 0 {
			t.Errorf("%s: %d boot calls answered neither 200 nor 429; first: %s", what, res.other, res.firstOther)
		}
	}
	check("three replicas", bootLoad(p.replicas, 4, window))

	lead.Kill(t)
	check("two survivors after kill -9 of the leader", bootLoad(p.followers(lead), 4, window))
}

// TestHostsTakeoverFlushesNothing pauses a slot holder (SIGSTOP) until
// every replica counts it unreachable. The followers then lose it (Drop on
// their hosts) and stall (SIGSTOP of their mcrib, as a VM migration would)
// while it returns and the leader flushes it, so that they see it return
// only after that flush. Then the leader is killed (-9): the follower that
// takes over knows the node was flushed already, so it flushes nothing.
func TestHostsTakeoverFlushesNothing(t *testing.T) {
	t.Parallel()
	p := newHostsPool(t, hostsOptions{nodes: 5, replicas: 3, slots: 4, hold: "30s"})
	before := p.filled()
	lead := p.leader(10 * time.Second)
	followers := p.followers(lead)
	victim := p.byID[before.Slot(1).ID]
	flushes := p.flushes()

	victim.mc.Pause(t)
	paused := time.Now()
	testenv.Eventually(t, 15*time.Second, "every replica counts "+victim.id+" unreachable", func() bool {
		for _, r := range p.replicas {
			st, err := r.api.status()
			if n, _ := nodeStatus(st, victim.id); err != nil || n.Reachable {
				return false
			}
		}
		return true
	})
	time.Sleep(time.Until(paused.Add(2*hostsProbeInterval + 500*time.Millisecond))) // more than two probe intervals in all
	// A follower's probe still waiting for the paused node would read its
	// answer, from before the leader's flush, once it resumes: the Drop
	// lets such probes time out (a probe interval, and the probe's
	// timeout of at most a second), and keeps new ones from reaching it.
	for _, f := range followers {
		f.host.Drop(t, victim.host.Addr)
	}
	time.Sleep(hostsProbeInterval + 1500*time.Millisecond)
	for _, f := range followers {
		f.Pause(t)
		testenv.Eventually(t, 5*time.Second, f.name+" stopped", func() bool { return f.Paused() })
	}
	victim.mc.Resume(t)
	flushes[victim.id]++
	testenv.Eventually(t, 20*time.Second, "the leader flushed "+victim.id+" on its return", func() bool {
		return mustStats(t, victim.mc.Addr).CmdFlush == flushes[victim.id]
	})
	for _, f := range followers {
		f.host.Undrop(t, victim.host.Addr)
		f.Resume(t)
	}
	resumed := time.Now()
	testenv.Eventually(t, 20*time.Second, "every follower saw "+victim.id+" return (after the flush) and completed a pass", func() bool {
		for _, f := range followers {
			st, err := f.api.status()
			if n, _ := nodeStatus(st, victim.id); err != nil || !n.Reachable || !reconciledAfter(st, resumed) {
				return false
			}
		}
		return true
	})

	lead.Kill(t)
	next := p.leader(30 * time.Second)
	t.Logf("%s took over from %s", next.name, lead.name)
	steady(t, 3*hostsProbeInterval, "after "+next.name+" took over", func() string {
		return p.flushesRose(flushes) + p.sameMap(before)
	})
}

// TestHostsLeaderLosesConsulServers blackholes the Consul server's address
// inside the leader's host (the Consul server has a host of its own, so the
// test binary still reaches the leader) while the leader's local agent
// still answers: its session renewals fail, so it steps down within the
// session TTL (10 s) plus a second; when the link returns, nothing is
// flushed or moved.
func TestHostsLeaderLosesConsulServers(t *testing.T) {
	t.Parallel()
	const stepDown = 11 * time.Second // the session TTL plus a second
	p := newHostsPool(t, hostsOptions{nodes: 5, replicas: 3, slots: 4, hold: "2s"})
	before := p.filled()
	lead := p.leader(10 * time.Second)
	flushes := p.flushes()

	lead.host.Blackhole(t, p.consulAt.Addr)
	cut := time.Now()
	var last mcribapi.Status
	stepped := within(stepDown, func() bool {
		st, err := lead.api.status()
		if err == nil {
			last = st
		}
		return err == nil && !st.Leader
	})
	if stepped {
		t.Logf("%s stepped down %v after it lost the Consul server", lead.name, time.Since(cut).Round(time.Millisecond))
	} else {
		t.Errorf("%s still says leader: %v (leader_id %q, consul_reachable %v) %v after it lost the Consul server; want leader: false within %v",
			lead.name, last.Leader, last.LeaderID, last.ConsulReachable, time.Since(cut).Round(time.Millisecond), stepDown)
	}
	time.Sleep(time.Until(cut.Add(stepDown))) // the partition outlasts the session TTL
	lead.host.Unblackhole(t, p.consulAt.Addr)
	healed := time.Now()
	p.rejoin(lead.agent)

	testenv.Eventually(t, 20*time.Second, lead.name+" reaches Consul and completed a pass after the link returned", func() bool {
		st, err := lead.api.status()
		return err == nil && st.ConsulReachable && reconciledAfter(st, healed)
	})
	next := p.leader(30 * time.Second)
	t.Logf("%s leads after the link returned", next.name)
	steady(t, 3*hostsProbeInterval, "after the leader's link to the Consul server returned", func() string {
		return p.flushesRose(flushes) + p.sameMap(before)
	})
}
