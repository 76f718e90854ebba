package clock

import (
	"context"
	"testing"
	"time"
)

var epoch = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

func TestFakeTimerFiresOnlyWhenPassed(t *testing.T) {
	f := NewFake(epoch)
	tm := f.NewTimer(time.Second)
	f.Advance(999 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("timer fired before its deadline")
	default:
	}
	f.Advance(time.Millisecond)
	select {
	case at := <-tm.C():
		if !at.Equal(epoch.Add(time.Second)) {
			t.Errorf("fired with %v, want the deadline", at)
		}
	default:
		t.Fatal("timer did not fire at its deadline")
	}
	if f.Waiters() != 0 {
		t.Errorf("a fired timer is still armed")
	}
	if tm.Reset(time.Second) {
		t.Errorf("Reset of a fired timer reported it active")
	}
	if !tm.Stop() {
		t.Errorf("Stop of an armed timer reported it inactive")
	}
	f.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
}

func TestFakeTickerDropsMissedTicks(t *testing.T) {
	f := NewFake(epoch)
	tk := f.NewTicker(time.Second)
	defer tk.Stop()
	f.Advance(5 * time.Second)
	n := 0
	for {
		select {
		case <-tk.C():
			n++
			continue
		default:
		}
		break
	}
	if n != 1 {
		t.Errorf("got %d ticks buffered after 5 periods unread, want 1 (like time.Ticker)", n)
	}
	f.Advance(time.Second)
	select {
	case at := <-tk.C():
		if !at.Equal(epoch.Add(6 * time.Second)) {
			t.Errorf("tick at %v, want %v", at, epoch.Add(6*time.Second))
		}
	default:
		t.Fatal("ticker stopped ticking")
	}
}

func TestSleepAndBlockUntil(t *testing.T) {
	f := NewFake(epoch)
	done := make(chan bool)
	go func() { done <- Sleep(context.Background(), f, time.Minute) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !f.BlockUntil(ctx, 1) {
		t.Fatal("Sleep never armed a timer")
	}
	f.Advance(time.Minute)
	if !<-done {
		t.Fatal("Sleep reported a dead context")
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if Sleep(cctx, f, time.Minute) {
		t.Fatal("Sleep on a cancelled context reported it alive")
	}
	if f.Waiters() != 0 {
		t.Errorf("Sleep left %d timers armed", f.Waiters())
	}
}

func TestSetNeverGoesBack(t *testing.T) {
	f := NewFake(epoch)
	f.Set(epoch.Add(-time.Hour))
	if !f.Now().Equal(epoch) {
		t.Errorf("Set moved the clock back to %v", f.Now())
	}
}
