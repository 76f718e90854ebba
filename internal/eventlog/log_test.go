package eventlog

import (
	"testing"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/mcribapi"
)

func TestLogKeepsTheLatestEventsNewestLast(t *testing.T) {
	fc := clock.NewFake(time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC))
	l := NewLog(Options{Size: 3, Clock: fc})
	for _, node := range []string{"mc-1", "mc-2", "mc-3", "mc-4", "mc-5"} {
		l.Add(mcribapi.Event{Kind: mcribapi.EventReplacement, Node: node, Reason: "hold expired"})
		fc.Advance(time.Second)
	}
	tests := []struct {
		since uint64
		want  []string
	}{
		{0, []string{"mc-3", "mc-4", "mc-5"}},
		{3, []string{"mc-4", "mc-5"}},
		{5, nil},
		{9, nil},
	}
	for _, tc := range tests {
		got := l.Since(tc.since)
		if len(got) != len(tc.want) {
			t.Fatalf("Since(%d) = %d events, want %v", tc.since, len(got), tc.want)
		}
		for i, e := range got {
			if e.Node != tc.want[i] {
				t.Errorf("Since(%d)[%d].Node = %q, want %q", tc.since, i, e.Node, tc.want[i])
			}
		}
	}
	all := l.Since(0)
	if all[0].Seq != 3 || all[2].Seq != 5 || l.Last() != 5 {
		t.Errorf("sequence numbers %d..%d, last %d; want 3..5, last 5", all[0].Seq, all[2].Seq, l.Last())
	}
	if want := time.Date(2026, 12, 1, 5, 0, 4, 0, time.UTC); !all[2].At.Equal(want) {
		t.Errorf("At = %v, want %v (the fake clock at Add)", all[2].At, want)
	}
	if all[0].Who != "mcrib" {
		t.Errorf("Who = %q, want mcrib for a decision of its own", all[0].Who)
	}
}

func TestLogKeepsGivenTimeAndWho(t *testing.T) {
	l := NewLog(Options{Clock: clock.NewFake(time.Unix(100, 0))})
	at := time.Unix(50, 0)
	e := l.Add(mcribapi.Event{At: at, Kind: mcribapi.EventOperator, Reason: "freeze: rollout", Who: "10.0.0.1:5555"})
	if !e.At.Equal(at) || e.Who != "10.0.0.1:5555" || e.Seq != 1 {
		t.Errorf("Add returned %+v; want At 50s, the given Who, Seq 1", e)
	}
}
