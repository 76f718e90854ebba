package controlloop

import (
	"context"

	"github.com/mcrib/mcrib/cachenodes"
)

// Observe hands the loop one answer of discovery, as Options.Discovery
// does while Run runs. It is for callers that drive the loop themselves
// instead of calling Run (the simulator of package sim): they deliver the
// answers, probe with ProbeNode and call Reconcile, all on one goroutine
// and on their own clock, so a run is deterministic.
func (l *Loop) Observe(m cachenodes.Membership) { l.onAnswer(m) }

// ProbeNode probes the node once through Options.Prober and hands the
// result to the loop, as the probe loop of Run does on each node's
// schedule; a node the loop does not track is ignored. Like Observe it is
// for callers that drive the loop without Run.
func (l *Loop) ProbeNode(ctx context.Context, n cachenodes.Node) {
	st, err := l.opts.Prober.Stats(ctx, n.Addr)
	if ctx.Err() == nil {
		l.observeProbe(n.ID, n.Addr, st, err)
	}
}
