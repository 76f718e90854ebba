package controlloop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestPeersClockCannotShortenAHold: slot holder a is absent from Consul
// for ten minutes while it answers (an agent restart); then two peers vote
// it unreachable; their clocks are off. The
// hold counts from the episode as the votes show it, placed on the
// leader's clock by when it read them: a peer an hour behind cannot make
// the hold expire at once (its since read raw was an hour old), one an
// hour ahead cannot put it off by an hour, and a second of skew moves it
// by no more than that, never shorter.
func TestPeersClockCannotShortenAHold(t *testing.T) {
	for _, skew := range []time.Duration{-time.Hour, -time.Second, time.Second, time.Hour} {
		t.Run(fmt.Sprint(skew), func(t *testing.T) {
			p := newPool(t, []string{"a", "b", "c", "d"}, []string{"e"}, nil)
			l := p.replica("l:7070", 0)
			p1, p2 := p.replica("p1:7070", skew), p.replica("p2:7070", skew)
			p.lead(l)
			p.listed = []string{"b", "c", "d", "e"}
			for _, r := range []*replica{l, p1, p2} {
				r.answer(p.listed...)
			}
			for range 10 {
				p.clk.Advance(time.Minute)
				for _, r := range []*replica{p1, p2} {
					r.probe()
					r.pass(mcribapi.OutcomeFollower)
				}
				l.probe()
				l.pass(mcribapi.OutcomeOK)
			}
			start := p.clk.Now()
			p1.down(true, "a")
			p2.down(true, "a")
			var replacedAt time.Duration
			for p.clk.Now().Sub(start) < 70*time.Second && replacedAt == 0 {
				for _, r := range []*replica{p1, p2} {
					r.probe()
					r.pass(mcribapi.OutcomeFollower)
				}
				l.probe()
				l.pass(mcribapi.OutcomeOK)
				if m, _ := p.store.stored(); m.Slot(0).ID != "a" {
					replacedAt = p.clk.Now().Sub(start)
				}
				p.clk.Advance(500 * time.Millisecond)
			}
			// The peers' probes fail from 0s and count from 1s (a whole
			// probe interval): the hold of 1m ends at 60s.
			if replacedAt == 0 {
				t.Fatal("a was not replaced within 70s, its hold of 1m long over")
			}
			if replacedAt < 60*time.Second || replacedAt > 61*time.Second {
				t.Fatalf("a replaced at %s, want when its hold of 1m ends, 60s (to 61s)", replacedAt)
			}
		})
	}
}

// TestLeaderAheadKeepsWarmingsAndPace: a new leader whose clock is an hour
// ahead of the one that wrote the map and the drain document does not end
// the warmings early (until read raw was an hour past) nor take the next
// drain step at once (last_step_at read raw was an hour old); with a
// second of skew, both move by about a second at most. The maps it writes
// keep the warming's until exactly as first written: clients compare it
// with their own clocks, so an until that moved would let one client read
// the old holder after another stopped writing to it.
func TestLeaderAheadKeepsWarmingsAndPace(t *testing.T) {
	for _, skew := range []time.Duration{time.Hour, time.Second, -time.Second} {
		t.Run(fmt.Sprint(skew), func(t *testing.T) {
			p := newPool(t, []string{"a1", "b1", "c1", "a2", "b2", "c2"}, []string{"a3", "a4", "c3", "c4"}, func(o *Options) {
				o.WarmFor = 2 * time.Minute
			})
			a, b := p.replica("a:7070", 0), p.replica("b:7070", skew)
			p.lead(a)
			a.pass(mcribapi.OutcomeOK)
			b.pass(mcribapi.OutcomeFollower)
			start := p.clk.Now()
			if _, err := a.loop.Drain(context.Background(), "az-b", mcribapi.Drain{Reason: "r", Percent: 100, StepPercent: 50, StepInterval: 30 * time.Second}, "ops"); err != nil {
				t.Fatal(err)
			}
			a.pass(mcribapi.OutcomeOK)
			b.pass(mcribapi.OutcomeFollower)
			// The first step serves 12s after its announce.
			p.clk.Advance(cachenodes.AnnounceLead)
			a.probe()
			a.pass(mcribapi.OutcomeOK)
			b.pass(mcribapi.OutcomeFollower)
			m, _ := p.store.stored()
			if m.Warming(4) == nil || zoneSlots(m)["az-b"] != 1 {
				t.Fatalf("the first step: slots %v, warming %+v", slotIDs(m), m.Warming(4))
			}
			until := m.Warming(4).Until
			p.lead(b, a)
			var steppedAt, endedAt time.Duration
			for p.clk.Now().Sub(start) < 150*time.Second {
				p.clk.Advance(500 * time.Millisecond)
				b.probe()
				b.pass(mcribapi.OutcomeOK)
				m, _ := p.store.stored()
				at := p.clk.Now().Sub(start)
				if steppedAt == 0 && zoneSlots(m)["az-b"] == 0 {
					steppedAt = at
				}
				if endedAt == 0 && m.Warming(4) == nil {
					endedAt = at
				}
				if w := m.Warming(4); w != nil && !w.Until.Equal(until) {
					t.Fatalf("at %s the new leader wrote slot 4's warming until %s, first written as %s", at, w.Until, until)
				}
			}
			// The second step is announced at the interval, 30s, and serves
			// 12s later.
			if steppedAt < 42*time.Second || steppedAt > 43*time.Second {
				t.Fatalf("the new leader's second step served at %s, want 12s after the interval of 30s (to 43s)", steppedAt)
			}
			// The first step served at 12s: its warming's reads end when
			// --warm-for (2m) passes, and its object goes 12s later.
			if endedAt < 144*time.Second || endedAt > 145*time.Second {
				t.Fatalf("the warming object of slot 4 went at %s, want 12s after --warm-for (2m) passes (to 145s)", endedAt)
			}
		})
	}
}

// TestVotePlacement: a vote's sinces are placed on the reader's clock by
// when it first read the vote, less their distance to the vote's at; they
// stay put while the writer republishes them unchanged; a vote of an older
// mcrib (without at) is read as written when first read.
func TestVotePlacement(t *testing.T) {
	var r remoteClock
	now := t0
	writer := t0.Add(-time.Hour) // the writer's clock is an hour behind
	got := r.placeVotes(map[string]Vote{
		"r2": {Session: "s2", At: writer, Unreachable: map[string]time.Time{"a": writer.Add(-3 * time.Second)}},
		"r3": {Session: "s3", Unreachable: map[string]time.Time{"a": writer.Add(-time.Minute)}},
		"me": {Session: "s1", At: now, Unreachable: map[string]time.Time{"a": now}},
	}, "me", now)
	if _, self := got["me"]; self || !got["r2"]["a"].Equal(now.Add(-3*time.Second)) || !got["r3"]["a"].Equal(now) {
		t.Fatalf("placed %v; want r2's a 3s before the first read, r3's (no at) at it, and no vote of this replica", got)
	}
	// Republished 10s later with b added: a stays where it was placed.
	now = now.Add(10 * time.Second)
	got = r.placeVotes(map[string]Vote{
		"r2": {Session: "s2", At: writer.Add(10 * time.Second), Unreachable: map[string]time.Time{"a": writer.Add(-3 * time.Second), "b": writer.Add(9 * time.Second)}},
	}, "me", now)
	if !got["r2"]["a"].Equal(t0.Add(-3*time.Second)) || !got["r2"]["b"].Equal(now.Add(-time.Second)) || len(r.votes) != 1 {
		t.Fatalf("after a republish: %v (%d sightings); want a kept, b placed 1s before this read, r3 forgotten", got, len(r.votes))
	}
}
