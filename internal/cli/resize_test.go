package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

func TestPrintSlotsMarksTwins(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{
		Pool: "default", Generation: 4, UpdatedAt: at, ResizedFrom: 2,
		Slots: []cachenodes.Node{
			{ID: "mc-1", Addr: "10.0.0.1:11211", AZ: "a"},
			{ID: "mc-2", Addr: "10.0.0.2:11211", AZ: "b"},
			{ID: "mc-3", Addr: "10.0.0.3:11211", AZ: "a"},
			{ID: "mc-2", Addr: "10.0.0.2:11211", AZ: "b"},
		},
		Twins: []bool{false, false, false, true},
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printSlots(&b, m, at)
	want := `pool default  generation 4  slots 4 (resized from 2, 1 twin left)  updated just now, at 2026-11-29T13:00:00Z

SLOT  NODE              ADDR            AZ
0     mc-1              10.0.0.1:11211  a
1     mc-2              10.0.0.2:11211  b
2     mc-3              10.0.0.3:11211  a
3     mc-2 (twin of 1)  10.0.0.2:11211  b

SPARES: none
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestPrintResize(t *testing.T) {
	at := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	last := at.Add(time.Minute)
	e := &mcribapi.ResizeEntry{From: 16, To: 32, Reason: "grown past its slots", By: "ops", At: at, StepPercent: 10, StepInterval: "30s",
		LastStepAt: &last, Twins: 9, Split: 7, State: mcribapi.ResizeSplitting, Blocked: "no ready spare for the next split: every node holds a slot; add a memcached to the service"}
	var b strings.Builder
	printResize(&b, e, last.Add(10*time.Second))
	for _, want := range []string{
		"resize from 16 to 32 slots: splitting: 7 of 16 twins split, 9 left\n",
		"  pace: 10% of the twins (2 twins) every 30s, last step 10 s ago",
		"  reason: grown past its slots (by ops, ",
		"  blocked: no ready spare for the next split",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printResize lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	printResize(&b, nil, at)
	if b.String() != "no resize under way\n" {
		t.Errorf("no entry: %q", b.String())
	}
	e.State = mcribapi.ResizeStopped
	if got := resizeProgress(e); !strings.Contains(got, "mcrib resize --slots 32 resumes") {
		t.Errorf("stopped: %q", got)
	}
	for30 := "3h0m0s"
	facts := resizeFacts(mcribapi.Status{Resize: e, Capacity: &mcribapi.Capacity{Slots: 16, Nodes: 24, SparesReady: 8, SparesFor: &for30}})
	if len(facts) != 3 || facts[0][0] != "resize" || facts[2][0] != "capacity" || !strings.Contains(facts[2][1], "for 3h0m0s (mcrib resize --slots 32 grows the pool)") {
		t.Errorf("status facts %q", facts)
	}
}
