package mcribapi

import (
	"fmt"
	"time"
)

// PoolFlags are the flags of mcrib serve that shape how the pool moves
// slots, as the status document carries them (its "flags"), so that
// mcrib sim --like and POST /v1/whatif simulate the pool as it runs.
// Durations are Go durations ("1m0s").
type PoolFlags struct {
	Hold                     string  `json:"hold"`
	ProbeInterval            string  `json:"probe_interval"`
	FlushAfterUnreachable    string  `json:"flush_after_unreachable"`
	StatsInterval            string  `json:"stats_interval"`
	MaxAbsentFraction        float64 `json:"max_absent_fraction"`
	MaxReplacementsPerMinute int     `json:"max_replacements_per_minute"`
	WarmFor                  string  `json:"warm_for"`
	WarmMin                  string  `json:"warm_min"`
	// WarmCopyRate is --warm-copy-rate in bytes a second per move (0:
	// no copy).
	WarmCopyRate int64 `json:"warm_copy_rate"`
}

// Durations returns the flags' durations, in the order of the fields
// (hold, probe interval, flush after unreachable, stats interval, warm
// for, warm min); an error names the first that does not parse.
func (f PoolFlags) Durations() ([6]time.Duration, error) {
	var out [6]time.Duration
	for i, v := range []struct{ name, text string }{
		{"hold", f.Hold}, {"probe_interval", f.ProbeInterval}, {"flush_after_unreachable", f.FlushAfterUnreachable},
		{"stats_interval", f.StatsInterval}, {"warm_for", f.WarmFor}, {"warm_min", f.WarmMin},
	} {
		if v.text == "" {
			continue
		}
		d, err := time.ParseDuration(v.text)
		if err != nil || d < 0 {
			return out, fmt.Errorf("flags.%s %q is not a duration", v.name, v.text)
		}
		out[i] = d
	}
	return out, nil
}
