package cli

import (
	"testing"
	"time"
)

func TestAgo(t *testing.T) {
	now := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d    time.Duration // how long before now
		want string
	}{
		{0, "just now"},
		{400 * time.Millisecond, "just now"},
		{2 * time.Second, "2 s ago"},
		{1500 * time.Millisecond, "2 s ago"},
		{119 * time.Second, "119 s ago"},
		{2 * time.Minute, "2 min ago"},
		{59*time.Minute + 59*time.Second, "59 min ago"},
		{time.Hour, "1 h ago"},
		{2*time.Hour + 5*time.Minute, "2 h 5 min ago"},
		{47 * time.Hour, "47 h ago"},
		{72 * time.Hour, "3 days ago"},
		{-30 * time.Second, "in 30 s"},
		{-3 * time.Minute, "in 3 min"},
	} {
		if got := ago(now.Add(-tc.d), now); got != tc.want {
			t.Errorf("ago(now - %v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := whenText(now.Add(-2*time.Second+300*time.Microsecond), now); got != "2 s ago, at 2026-11-29T12:59:58Z" {
		t.Errorf("whenText = %q, want the age and the time to the second", got)
	}
	if got := whenText(time.Time{}, now); got != "at an unknown time" {
		t.Errorf("whenText(zero) = %q", got)
	}
}
