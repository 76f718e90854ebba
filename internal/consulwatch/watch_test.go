package consulwatch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/backoff"
)

func TestIndexRuleAndSkippedAnswers(t *testing.T) {
	const (
		minInterval = time.Second
		waitTime    = 42 * time.Second
	)
	h := start(t, Options[string]{WaitTime: waitTime, MinInterval: minInterval, Jitter: noJitter, Equal: equalStrings}, nil)
	steps := []struct {
		name      string
		waitIndex uint64 // of the query
		value     string // answered
		index     uint64 // answered
		delivered bool
	}{
		{"first answer always delivered", 0, "a", 10, true},
		{"wait timed out: index did not move", 10, "a", 10, false},
		{"a change", 10, "b", 12, true},
		{"index moved, value equal", 12, "b", 13, false},
		{"index went backwards: the new truth is delivered", 13, "c", 5, true},
		{"after the reset: same index again", 0, "c", 5, false},
		{"a broken index of 0 is a reset too", 5, "c", 0, false},
		{"0 after an answer becomes 1", 0, "c", 0, false},
		{"an index of 0 is judged by Equal alone", 1, "d", 0, true},
		{"index moves on from 1", 1, "d", 30, false},
		{"blocking on the last index", 30, "e", 31, true},
	}
	for _, st := range steps {
		c := h.next(t)
		if c.waitIndex != st.waitIndex {
			t.Fatalf("%s: query with WaitIndex %d, want %d", st.name, c.waitIndex, st.waitIndex)
		}
		wantWait := waitTime
		if st.waitIndex == 0 {
			wantWait = 0
		}
		if c.waitTime != wantWait {
			t.Fatalf("%s: query with WaitTime %v, want %v", st.name, c.waitTime, wantWait)
		}
		// The query took MinInterval: the next one may start at once.
		h.clk.Advance(minInterval)
		c.answer(st.value, st.index)
		if st.delivered {
			if got := h.delivered(t); got != (change{st.value, st.index}) {
				t.Fatalf("%s: delivered %+v, want %q at %d", st.name, got, st.value, st.index)
			}
		}
	}
	h.next(t) // the last answer was handled in full
	h.nothingDelivered(t, "after the script")
}

func TestNilEqualComparesIndexesOnly(t *testing.T) {
	h := start(t, Options[string]{MinInterval: time.Second, Jitter: noJitter}, nil)
	for i, a := range []struct {
		index     uint64
		delivered bool
	}{{3, true}, {3, false}, {4, true}, {5, true}} {
		c := h.next(t)
		h.clk.Advance(time.Second)
		c.answer("same", a.index)
		if a.delivered {
			if got := h.delivered(t); got.index != a.index {
				t.Fatalf("answer %d: delivered index %d, want %d", i, got.index, a.index)
			}
		}
	}
	h.next(t)
	h.nothingDelivered(t, "after the script")
}

func TestMinIntervalSpacesQueryStarts(t *testing.T) {
	h := start(t, Options[string]{MinInterval: time.Second, Jitter: func() float64 { return 0.5 }}, nil)
	for i := range 3 {
		c := h.next(t)
		if want := epoch.Add(time.Duration(i) * 1250 * time.Millisecond); !c.at.Equal(want) {
			t.Fatalf("query %d started at %v, want %v (MinInterval stretched by a quarter)", i, c.at.Sub(epoch), want.Sub(epoch))
		}
		// The answer comes at once and is delivered at once.
		c.answer(fmt.Sprint(i), uint64(i+1))
		if got := h.delivered(t); got.index != uint64(i+1) {
			t.Fatalf("delivered %+v", got)
		}
		h.waitArmed(t)
		h.clk.Advance(1249 * time.Millisecond)
		h.noQuery(t, "before the jittered MinInterval passed")
		if h.clk.Waiters() != 1 {
			t.Fatalf("%d timers armed while waiting out MinInterval, want 1", h.clk.Waiters())
		}
		h.clk.Advance(time.Millisecond)
	}
}

func TestErrorsBackOffAndStartOver(t *testing.T) {
	bo := backoff.Backoff{Min: time.Second, Max: 4 * time.Second, Jitter: noJitter}
	h := start(t, Options[string]{MinInterval: time.Millisecond, Jitter: noJitter, Backoff: bo}, nil)
	c := h.next(t)
	h.answerAfter(c, time.Millisecond, "a", 7)
	h.delivered(t)
	c = h.next(t)
	if c.waitIndex != 7 {
		t.Fatalf("the query after an answer has WaitIndex %d, want 7", c.waitIndex)
	}
	boom := errors.New("consul: 500")
	// Waits after failures 1..4 in a row: the lower half of 1s, 2s, 4s, 4s.
	for i, wait := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second} {
		failedAt := h.clk.Now()
		c.fail(boom)
		if err := h.failed(t); !errors.Is(err, boom) {
			t.Fatalf("onError got %v, want the query's error", err)
		}
		h.waitArmed(t)
		h.clk.Advance(wait - time.Millisecond)
		h.noQuery(t, fmt.Sprintf("failure %d, before the backoff of %v passed", i+1, wait))
		h.clk.Advance(time.Millisecond)
		c = h.next(t)
		if got := c.at.Sub(failedAt); got != wait {
			t.Fatalf("retry %d came %v after the failure, want %v", i+1, got, wait)
		}
		if c.waitIndex != 0 {
			t.Fatalf("retry %d has WaitIndex %d, want 0 (start over after an error)", i+1, c.waitIndex)
		}
	}
	// A success resets the backoff; the index delivered before the
	// failures is not delivered again.
	h.answerAfter(c, time.Millisecond, "a", 7)
	c = h.next(t)
	if c.waitIndex != 7 {
		t.Fatalf("after the success WaitIndex is %d, want 7", c.waitIndex)
	}
	h.nothingDelivered(t, "the answer of the index delivered before the failures")
	failedAt := h.clk.Now()
	c.fail(boom)
	h.failed(t)
	h.waitArmed(t)
	h.clk.Advance(500 * time.Millisecond)
	if c = h.next(t); c.at.Sub(failedAt) != 500*time.Millisecond {
		t.Fatalf("after a success the first retry waited %v, want the first step 500ms", c.at.Sub(failedAt))
	}
}

func TestQueryDeadline(t *testing.T) {
	const (
		waitTime = 16 * time.Second
		margin   = 2 * time.Second
	)
	h := start(t, Options[string]{WaitTime: waitTime, Margin: margin, MinInterval: time.Millisecond, Jitter: noJitter,
		Backoff: backoff.Backoff{Min: time.Second, Jitter: noJitter}}, nil)
	check := func(c *request, limit time.Duration) {
		t.Helper()
		h.clk.Advance(limit - time.Millisecond)
		if h.clk.Waiters() != 1 || c.ctx.Err() != nil {
			t.Fatalf("the deadline of %v passed before its time", limit)
		}
		h.clk.Advance(time.Millisecond)
		err := h.failed(t)
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.Canceled) {
			t.Fatalf("onError got %v, want ErrTimeout wrapping the query's error", err)
		}
		h.waitArmed(t)
		h.clk.Advance(500 * time.Millisecond)
	}
	// A non-blocking query gets the margin alone.
	check(h.next(t), margin)
	c := h.next(t)
	h.answerAfter(c, time.Millisecond, "a", 1)
	h.delivered(t)
	// A blocking query gets WaitTime, Consul's jitter of WaitTime/16 and
	// the margin: 16s + 1s + 2s.
	if c = h.next(t); c.waitIndex != 1 {
		t.Fatalf("WaitIndex %d, want 1", c.waitIndex)
	}
	check(c, 19*time.Second)
}

func TestNoMetadataIsAnError(t *testing.T) {
	h := start(t, Options[string]{}, nil)
	h.next(t).reply <- reply{noMeta: true}
	if err := h.failed(t); !errors.Is(err, errNoMeta) {
		t.Fatalf("onError got %v, want errNoMeta", err)
	}
}

func TestRejectedAnswerIsOfferedAgain(t *testing.T) {
	refuse := errors.New("cannot apply it now")
	rejected := 0
	h := start(t, Options[string]{MinInterval: time.Millisecond, Jitter: noJitter, Backoff: backoff.Backoff{Min: time.Second, Jitter: noJitter}, Equal: equalStrings},
		func(v string) error {
			if v == "b" && rejected == 0 {
				rejected++
				return refuse
			}
			return nil
		})
	c := h.next(t)
	h.answerAfter(c, time.Millisecond, "a", 1)
	h.delivered(t)
	c = h.next(t)
	h.answerAfter(c, time.Millisecond, "b", 2)
	h.delivered(t)
	if err := h.failed(t); !errors.Is(err, refuse) {
		t.Fatalf("onError got %v, want onChange's error", err)
	}
	h.waitArmed(t)
	h.clk.Advance(500 * time.Millisecond)
	c = h.next(t)
	if c.waitIndex != 0 {
		t.Fatalf("after a rejected answer WaitIndex is %d, want 0 (ask again at once)", c.waitIndex)
	}
	h.answerAfter(c, time.Millisecond, "b", 2)
	if got := h.delivered(t); got != (change{"b", 2}) {
		t.Fatalf("delivered %+v, want the rejected answer again", got)
	}
	if c = h.next(t); c.waitIndex != 2 {
		t.Fatalf("WaitIndex %d after the answer was accepted, want 2", c.waitIndex)
	}
	h.nothingDelivered(t, "after the answer was accepted")
}

func TestRunReturnsWhenCancelled(t *testing.T) {
	for _, during := range []string{"a query", "a backoff", "the minimum interval"} {
		t.Run(during, func(t *testing.T) {
			h := start(t, Options[string]{MinInterval: time.Hour, Backoff: backoff.Backoff{Min: time.Hour}}, nil)
			c := h.next(t)
			switch during {
			case "a backoff":
				c.fail(errors.New("down"))
				h.failed(t)
				h.waitArmed(t)
			case "the minimum interval":
				c.answer("a", 1)
				h.delivered(t)
				h.waitArmed(t)
			}
			h.stop(t)
			h.nothingDelivered(t, "after cancel")
		})
	}
}
