package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// warmVariant is how the warm moves of one run of the growth and
// zone-drain benchmarks are made: mcrib serve's warm flags, or (naive)
// no mcrib move at all. The benchmarks run each variant side by side on
// pools of their own, so that what each part of a warm move (the copy,
// the end at convergence) gains shows (docs/performance.md).
type warmVariant struct {
	name  string   // the run's name in the report
	flags []string // mcrib serve's warm flags (none: their defaults)
	// naive switches the clients at once to a plain map (the growth
	// benchmark's baseline) instead of asking mcrib to move anything.
	naive bool
	// warm is false for the runs without warm moves (cold, naive).
	warm bool
	what string // what the run is, for the report
}

// The variants of the warm-move benchmarks. fixed2m is the warm move
// before warmings ended at convergence and the leader copied the hot
// keys: no convergence sooner than --warm-min 2m, nothing later than
// --warm-for 2m, and no copy.
var (
	variantDefault = warmVariant{name: "default", warm: true,
		what: "the warm flags at their defaults (`--warm-for 30m --warm-min 30s --warm-copy-rate 20MB`): warmings end at convergence and the leader copies the hot keys"}
	variantCopyOff = warmVariant{name: "copy off", flags: []string{"--warm-copy-rate", "0"}, warm: true,
		what: "the same with the copy off (`--warm-copy-rate 0`): warmings end at convergence, the new holder fills only by the clients' reads"}
	variantFixed2m = warmVariant{name: "fixed 2m", flags: []string{"--warm-min", "2m", "--warm-for", "2m", "--warm-copy-rate", "0"}, warm: true,
		what: "the old fixed window (`--warm-min 2m --warm-for 2m --warm-copy-rate 0`): every warming lasts 2 minutes, no copy"}
	variantCold = warmVariant{name: "cold", flags: []string{"--warm-for", "0s"},
		what: "cold moves (`--warm-for 0s`), a baseline"}
	variantNaive = warmVariant{name: "naive", flags: []string{"--warm-for", "0s"}, naive: true,
		what: "the naive resize, the baseline of the growth's targets"}
)

// flagText is the variant's flags as the report shows them.
func (v warmVariant) flagText() string {
	if len(v.flags) == 0 {
		return "(defaults)"
	}
	return "`" + strings.Join(v.flags, " ") + "`"
}

// warmEnds is what the events said of the warmings of a run: how many
// began, why each ended, how long they lasted, and the copy's counters.
type warmEnds struct {
	started                           int
	converged, quiet, drained, window int
	other                             int
	// shortest, median and longest are the warmings' lengths, from
	// their warm start event to their warm end event.
	shortest, median, longest time.Duration
	// lastEnd is the last warm end event's time.
	lastEnd time.Time
	// copiedKeys and copiedBytes are mcrib_warm_copied_keys_total and
	// mcrib_warm_copied_bytes_total at the end of the run.
	copiedKeys, copiedBytes float64
}

// copiedSoFar returns mcrib_warm_copied_keys_total and
// mcrib_warm_copied_bytes_total of api (0 when not listed yet).
func copiedSoFar(api *apiClient) (keys, bytes float64) {
	keys, _ = api.metricValue("mcrib_warm_copied_keys_total")
	bytes, _ = api.metricValue("mcrib_warm_copied_bytes_total")
	return keys, bytes
}

// readWarmEnds reads the warm start and warm end events after seq and the
// copy's counters from api, less keys0 and bytes0 (what copiedSoFar said
// when the phase began).
func readWarmEnds(api *apiClient, seq uint64, keys0, bytes0 float64) (warmEnds, error) {
	var w warmEnds
	evs, err := api.events()
	if err != nil {
		return w, err
	}
	evs = slices.DeleteFunc(evs, func(e mcribapi.Event) bool { return e.Seq <= seq })
	w = warmEndsOf(evs)
	keys, bytes := copiedSoFar(api)
	w.copiedKeys, w.copiedBytes = keys-keys0, bytes-bytes0
	return w, nil
}

// warmEndsOf sums up the warm start and warm end events of evs.
func warmEndsOf(evs []mcribapi.Event) warmEnds {
	var w warmEnds
	began := map[int]time.Time{}
	var lengths []time.Duration
	for _, e := range evs {
		if e.Slot == nil {
			continue
		}
		switch e.Kind {
		case mcribapi.EventWarmStart:
			w.started++
			began[*e.Slot] = e.At
		case mcribapi.EventWarmEnd:
			switch {
			case strings.Contains(e.Reason, "converged: its new holder saw under"):
				w.quiet++
			case strings.Contains(e.Reason, "converged:"):
				w.converged++
			case strings.Contains(e.Reason, "a warming from a drained zone lasts at most"):
				w.drained++
			case strings.Contains(e.Reason, "--warm-for passed"):
				w.window++
			default:
				w.other++
			}
			if at, ok := began[*e.Slot]; ok {
				lengths = append(lengths, e.At.Sub(at))
				delete(began, *e.Slot)
			}
			if e.At.After(w.lastEnd) {
				w.lastEnd = e.At
			}
		}
	}
	if len(lengths) > 0 {
		slices.Sort(lengths)
		w.shortest, w.median, w.longest = lengths[0], lengths[len(lengths)/2], lengths[len(lengths)-1]
	}
	return w
}

// text describes the warmings for the report.
func (w warmEnds) text() string {
	if w.started == 0 {
		return "no warming"
	}
	copied := fmt.Sprintf("%.0f keys and %.0f bytes copied", w.copiedKeys, w.copiedBytes)
	if w.converged+w.quiet+w.drained+w.window+w.other == 0 {
		return fmt.Sprintf("%d warmings, none over by the end of the run; %s", w.started, copied)
	}
	var why []string
	for _, c := range []struct {
		n    int
		what string
	}{{w.converged, "converged"}, {w.quiet, "converged as quiet"}, {w.drained, "at the drained zone's 2m"},
		{w.window, "at --warm-for"}, {w.other, "for another reason"},
		{w.started - (w.converged + w.quiet + w.drained + w.window + w.other), "not over by the end of the run"}} {
		if c.n > 0 {
			why = append(why, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return fmt.Sprintf("%d warmings (%s), %s–%s long (median %s); %s",
		w.started, strings.Join(why, ", "), w.shortest.Round(time.Second), w.longest.Round(time.Second), w.median.Round(time.Second), copied)
}

// benchVariants returns the variants of all named in list (comma
// separated), in their order, and the last of all, the baseline, always;
// all of them when list is empty. A name not among them fails the test.
func benchVariants(t *testing.T, all []warmVariant, list string) []warmVariant {
	if list == "" {
		return all
	}
	var out []warmVariant
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(all, func(v warmVariant) bool { return v.name == strings.TrimSpace(name) })
		if i < 0 {
			t.Fatalf("no run %q among the benchmark's runs", name)
		}
		if i < len(all)-1 {
			out = append(out, all[i])
		}
	}
	return append(out, all[len(all)-1])
}
