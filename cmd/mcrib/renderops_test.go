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
			"  mc-2: flush pending (held back until the freeze lifts or the leader flushes it)\n" +
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
		"hit rate:          unknown\nslots unserved:    1 (vacant, or held by an unreachable node",
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
