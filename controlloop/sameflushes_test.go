package controlloop

import (
	"testing"
	"time"
)

// TestSameFlushesTellsEveryFieldApart: the leader stores the flushes
// document again only when the entries it owes differ from the stored
// ones (sameFlushes), so every field an entry gets or changes after its
// decision counts: the base an entry decided from no reading gets once
// the node answers (pid, cmd_flush, its start), above all, which the
// next leader needs so as not to flush the node again. The order of the
// entries does not count.
func TestSameFlushesTellsEveryFieldApart(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	base := OwedFlush{NodeID: "mc-1", Addr: "10.0.0.1:11211", CmdFlush: 3, PID: 41, StartedAt: t0.Add(-time.Hour), Since: t0, Reason: "unreachable"}
	other := OwedFlush{NodeID: "mc-2", Addr: "10.0.0.2:11211", Since: t0, Reason: "unreachable"}
	if !sameFlushes([]OwedFlush{base, other}, []OwedFlush{other, base}) {
		t.Errorf("the same entries in another order are not the same")
	}
	for name, change := range map[string]func(*OwedFlush){
		"node":              func(e *OwedFlush) { e.NodeID = "mc-3" },
		"address":           func(e *OwedFlush) { e.Addr = "10.0.0.3:11211" },
		"cmd_flush":         func(e *OwedFlush) { e.CmdFlush = 4 },
		"cmd_flush unknown": func(e *OwedFlush) { e.CmdFlushUnknown = true },
		"pid":               func(e *OwedFlush) { e.PID = 42 },
		"start":             func(e *OwedFlush) { e.StartedAt = e.StartedAt.Add(time.Second) },
		"episode start":     func(e *OwedFlush) { e.Since = e.Since.Add(time.Second) },
		"reason":            func(e *OwedFlush) { e.Reason = "named in a corrupt document" },
	} {
		changed := base
		change(&changed)
		if sameFlushes([]OwedFlush{base, other}, []OwedFlush{other, changed}) {
			t.Errorf("entries differing in their %s are the same: the leader would not store the change", name)
		}
	}
	if sameFlushes([]OwedFlush{base}, []OwedFlush{base, other}) {
		t.Errorf("one entry more is the same")
	}
}
