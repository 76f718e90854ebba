package eventlog

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/mcribapi"
)

func TestHistoryPointsPerInterval(t *testing.T) {
	fc := clock.NewFake(time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC))
	h := NewHistory(HistoryOptions{Interval: 10 * time.Second, Window: 30 * time.Second, Clock: fc})
	rec := Recorder{Log: NewLog(Options{Clock: fc}), History: h}

	// Interval 1: no traffic yet, a refusal.
	h.Admission(false)
	fc.Advance(10 * time.Second)
	h.Sample(Reading{BootLimit: 100, BootMode: "auto"})
	// Interval 2: two admissions, a replacement and its flush.
	h.Admission(true)
	h.Admission(true)
	rec.Record(mcribapi.Event{Kind: mcribapi.EventFlush, Node: "mc-4"})
	rec.Record(mcribapi.Event{Kind: mcribapi.EventReplacement, Node: "mc-2"})
	rec.Record(mcribapi.Event{Kind: mcribapi.EventHoldStarted, Node: "mc-3"})
	fc.Advance(10 * time.Second)
	h.Sample(Reading{HitRate: 0.9, HitRateKnown: true, BootLimit: 50, BootMode: "manual"})

	s := h.Series()
	if len(s.At) != 2 || s.IntervalSeconds != 10 || s.WindowSeconds != 30 {
		t.Fatalf("series of %d points, interval %v, window %v; want 2, 10, 30", len(s.At), s.IntervalSeconds, s.WindowSeconds)
	}
	if s.HitRate[0] != nil {
		t.Errorf("hit rate before any traffic = %v, want null (unknown)", *s.HitRate[0])
	}
	if s.HitRate[1] == nil || *s.HitRate[1] != 0.9 {
		t.Errorf("hit rate of the second point = %v, want 0.9", s.HitRate[1])
	}
	tests := []struct {
		name string
		got  []int
		want []int
	}{
		{"admissions", s.Admissions, []int{0, 2}},
		{"refusals", s.Refusals, []int{1, 0}},
		{"flushes", s.Flushes, []int{0, 1}},
		{"replacements", s.Replacements, []int{0, 1}},
	}
	for _, tc := range tests {
		if tc.got[0] != tc.want[0] || tc.got[1] != tc.want[1] {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if s.BootLimit[1] != 50 || s.BootMode[1] != "manual" {
		t.Errorf("boot limit %v %q, want 50 manual", s.BootLimit[1], s.BootMode[1])
	}
	if rec.Log.Last() != 3 {
		t.Errorf("the log holds %d events, want 3", rec.Log.Last())
	}
}

func TestHistoryDropsPointsOutsideTheWindow(t *testing.T) {
	fc := clock.NewFake(time.Unix(0, 0))
	h := NewHistory(HistoryOptions{Interval: time.Minute, Window: 3 * time.Minute, Clock: fc})
	for i := range 5 {
		fc.Advance(time.Minute)
		h.Sample(Reading{BootLimit: float64(i)})
	}
	s := h.Series()
	if len(s.BootLimit) != 3 || s.BootLimit[0] != 2 || s.BootLimit[2] != 4 {
		t.Errorf("boot limits %v, want [2 3 4] (the last three minutes)", s.BootLimit)
	}
	if !s.At[2].Equal(time.Unix(300, 0)) {
		t.Errorf("newest point at %v, want 300s", s.At[2])
	}
}

func TestHistoryRunSamplesOnItsClock(t *testing.T) {
	fc := clock.NewFake(time.Unix(0, 0))
	h := NewHistory(HistoryOptions{Interval: 5 * time.Second, Clock: fc})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { h.Run(ctx, func() Reading { return Reading{BootLimit: 7} }) })
	defer func() { cancel(); wg.Wait() }()
	if !fc.BlockUntil(ctx, 1) {
		t.Fatal("Run did not start its ticker")
	}
	fc.Advance(5 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for len(h.Series().At) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no point after one interval")
		}
		runtime.Gosched()
	}
	if got := h.Series().BootLimit[0]; got != 7 {
		t.Errorf("boot limit %v, want 7", got)
	}
}
