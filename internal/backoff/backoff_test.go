package backoff

import (
	"testing"
	"time"
)

func TestDelayDoublesAndCaps(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second, Jitter: func() float64 { return 0.999999 }}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		got := b.Next()
		w *= time.Millisecond
		if got > w || got < w*99/100 {
			t.Errorf("failure %d: wait %v, want just under %v", i+1, got, w)
		}
	}
	if b.Failures() != len(want) {
		t.Errorf("Failures() = %d, want %d", b.Failures(), len(want))
	}
	b.Reset()
	if got := b.Next(); got > 100*time.Millisecond {
		t.Errorf("after Reset the first wait is %v, want at most 100ms", got)
	}
}

func TestJitterSpreadsOverUpperHalf(t *testing.T) {
	b := Backoff{Min: time.Second, Max: time.Second}
	lo, hi := time.Hour, time.Duration(0)
	for range 1000 {
		d := b.Next()
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 500*time.Millisecond || hi >= time.Second {
		t.Errorf("waits in [%v, %v], want within [500ms, 1s)", lo, hi)
	}
	if hi-lo < 300*time.Millisecond {
		t.Errorf("waits in [%v, %v]: jitter does not spread them", lo, hi)
	}
}

func TestZeroValueDefaultsAndHugeCounts(t *testing.T) {
	var b Backoff
	if d := b.Delay(1); d < DefaultMin/2 || d >= DefaultMin {
		t.Errorf("zero value first wait %v, want in [%v, %v)", d, DefaultMin/2, DefaultMin)
	}
	for _, n := range []int{40, 64, 1 << 20} {
		if d := b.Delay(n); d < DefaultMax/2 || d >= DefaultMax {
			t.Errorf("Delay(%d) = %v, want capped in [%v, %v)", n, d, DefaultMax/2, DefaultMax)
		}
	}
	small := Backoff{Min: time.Second, Max: 10 * time.Millisecond, Jitter: func() float64 { return 0 }}
	if d := small.Delay(1); d != 5*time.Millisecond {
		t.Errorf("Min above Max: first wait %v, want Max/2 = 5ms", d)
	}
}
