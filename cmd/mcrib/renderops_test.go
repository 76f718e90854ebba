package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/ratelimit"
)

func TestPrintStatusUnderFire(t *testing.T) {
	slot := func(n int) *int { return &n }
	secs := func(f float64) *float64 { return &f }
	doc := statusDocument{
		Status: controlloop.Status{
			Pool: "default", Leader: true, LeaderID: "host-a:7070", ConsulReachable: true,
			VacantSlots: 1, ReplacementsBlocked: 2, LastError: "the slot map changed under this pass (check-and-set failed)",
			Nodes: []controlloop.NodeStatus{
				{ID: "mc-1", Slot: slot(0), State: "held", HoldRemainingSeconds: secs(41.6)},
				{ID: "mc-2", Slot: slot(1), State: "flushing", Reachable: true, FlushPending: true},
				{ID: "mc-3", State: "down", HoldRemainingSeconds: nil, Suppressed: true, Flaps: 4},
				{ID: "mc-4", Slot: slot(2), State: "held", HoldRemainingSeconds: secs(0)},
				{ID: "mc-5", Slot: slot(3), State: "serving", Reachable: true},
			},
		},
		BootLimit: ratelimit.Document{Mode: "manual", Limit: 50, Burst: 5},
	}
	var b bytes.Buffer
	printStatus(&b, doc, nil, testNow)
	out := b.String()
	for _, want := range []string{
		"hit rate:          unknown\n",
		"vacant slots:      1 (keys of a vacant slot miss until a spare is placed)\n",
		"blocked:           2 replacements due but held back by a freeze or the replacement ceiling\n",
		"last error:        the slot map changed under this pass (check-and-set failed)\n",
		"\nwaiting:\n" +
			"  mc-1: hold ends in 42s\n" +
			"  mc-2: flush owed: the leader flushes it at its next pass\n" +
			"  mc-3: suppressed after 4 flaps: not placed until it is steady\n" +
			"  mc-4: hold over: due for replacement\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "mc-5:") {
		t.Errorf("a node waiting for nothing has a note:\n%s", out)
	}
}

// knownRate is a boot limiter that has, or has not, measured a hit rate.
type knownRate struct {
	bootLimiter
	known bool
}

func (k knownRate) HitRate() (float64, bool) { return 0, k.known }

func TestStatusHitRateIsNullBeforeTraffic(t *testing.T) {
	for _, tc := range []struct {
		known bool
		want  string
	}{
		{false, `"hit_rate":null`},
		{true, `"hit_rate":0.5`},
	} {
		doc := withKnownHitRate(newStatusDocument(controlloop.Status{}, ratelimit.Document{HitRate: ratelimit.RateOf(0.5)}), knownRate{known: tc.known})
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b[strings.Index(string(b), `"hit_rate"`):]), tc.want) {
			t.Errorf("measured %v: document %s, want %s", tc.known, b, tc.want)
		}
	}
}

// TestPrintStatusHeldAndUnserved: a held node says when its slot goes to
// a spare if it does not return (or that it keeps it while it answers),
// and slots_unserved stands beside the hit rate.
func TestPrintStatusHeldAndUnserved(t *testing.T) {
	slot := func(n int) *int { return &n }
	secs := func(f float64) *float64 { return &f }
	until := time.Now().Add(22 * time.Second)
	doc := statusDocument{
		Status: controlloop.Status{
			Pool: "default", Leader: true, SlotsUnserved: 1,
			Nodes: []controlloop.NodeStatus{
				{ID: "mc-1", Slot: slot(0), State: "held", HoldRemainingSeconds: secs(21.8), HeldUntil: &until},
				{ID: "mc-2", Slot: slot(1), State: "held", Reachable: true},
				{ID: "mc-3", Slot: slot(2), State: "held", HoldRemainingSeconds: secs(0), HeldUntil: &until},
			},
		},
	}
	var b bytes.Buffer
	printStatus(&b, doc, nil, testNow)
	out := b.String()
	for _, want := range []string{
		"hit rate:          unknown\nslots unserved:    1: vacant, or held by an unreachable node",
		"  mc-1: held, replaced in 22 s if it does not return\n",
		"  mc-2: held: absent from Consul but it answers, so it keeps its slot and its contents\n",
		"  mc-3: held: its hold is over, replaced as soon as a spare, the replacement ceiling and the freezes allow\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hold ends in") {
		t.Errorf("the held sentence is said twice:\n%s", out)
	}
}

// TestPrintStatusUnservedShare: slots_unserved is told as a share of the
// slots when the server sends num_slots, so that "1" reads as the quarter
// of the keys it is on a pool of four slots.
func TestPrintStatusUnservedShare(t *testing.T) {
	for _, tc := range []struct {
		unserved, slots int
		want            string
	}{
		{0, 4, "slots unserved:    0 of 4\n"},
		{1, 4, "slots unserved:    1 of 4 (25% of the keys): vacant, or held by an unreachable node; their keys reach no memcached"},
		{1, 3, "slots unserved:    1 of 3 (33.3% of the keys): "},
		{0, 0, "slots unserved:    0\n"},
	} {
		var b bytes.Buffer
		printStatus(&b, statusDocument{Status: controlloop.Status{Pool: "default", SlotsUnserved: tc.unserved, NumSlots: tc.slots}}, nil, testNow)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%d unserved of %d slots: output lacks %q:\n%s", tc.unserved, tc.slots, tc.want, b.String())
		}
	}
}

// TestPrintStatusSaysWhatEachWaitsFor: an owed flush says what it waits
// for (the node to answer, the freeze, the leader), a holder that does
// not answer while Consul lists it says when its hold starts, and a warm
// source says until when it warms and what it is afterwards.
func TestPrintStatusSaysWhatEachWaitsFor(t *testing.T) {
	slot := func(n int) *int { return &n }
	until := testNow.Add(90 * time.Second)
	nodes := []controlloop.NodeStatus{
		{ID: "mc-1", Slot: slot(0), State: "serving", Consul: "present", Reachable: false},
		{ID: "mc-2", State: "down", FlushPending: true},
		{ID: "mc-3", Slot: slot(1), State: "flushing", Reachable: true, FlushPending: true},
		{ID: "mc-5", State: "warming", Reachable: true, Warming: slot(2), WarmingUntil: &until, Drained: true},
		{ID: "mc-6", State: "warming", Reachable: true, Warming: slot(3), WarmingUntil: &until},
	}
	for _, tc := range []struct {
		name              string
		frozen, autoFroze bool
		mc3               string
	}{
		{"not frozen", false, false, "  mc-3: flush owed: the leader flushes it at its next pass\n"},
		{"frozen", true, false, "  mc-3: flush owed, held back until the freeze lifts (mcrib unfreeze)\n"},
		{"auto-frozen", false, true, "  mc-3: flush owed, held back while the automatic freeze holds\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printStatus(&b, statusDocument{Status: controlloop.Status{Pool: "default", Frozen: tc.frozen, AutoFrozen: tc.autoFroze, Nodes: nodes}}, nil, testNow)
			out := b.String()
			for _, want := range []string{
				"  mc-1: does not answer, so its slot's keys reach no memcached; it keeps its slot while Consul lists it, and its hold starts when Consul marks it absent\n",
				"  mc-2: flush owed: it may have missed deletes, so it is flushed when it answers again, before it serves\n",
				tc.mc3,
				"  mc-5: warm source of slot 2 until 2026-11-29T13:01:32Z (in 90 s), then a spare of its drained zone\n",
				"  mc-6: warm source of slot 3 until 2026-11-29T13:01:32Z (in 90 s), then a spare\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("status output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "freeze lifts") != tc.frozen {
				t.Errorf("the freeze named when frozen is %v:\n%s", tc.frozen, out)
			}
		})
	}
}
