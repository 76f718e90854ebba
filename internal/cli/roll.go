package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The roll commands (docs/cli.md, "mcrib roll"); --exec is rollexec.go.

// Roll prints GET /v1/roll as a person reads it ("no roll under way" when
// there is none); --json prints it raw.
func (c *Client) Roll(ctx context.Context) error {
	a, err := c.api.Roll(ctx)
	return c.showRoll(a, err)
}

// StartRoll sends PUT /v1/roll with req and prints the roll.
func (c *Client) StartRoll(ctx context.Context, req mcribapi.RollRequest) error {
	a, err := c.api.StartRoll(ctx, req)
	return c.showRoll(a, err)
}

// StopRoll sends DELETE /v1/roll and prints the roll; the server's
// sentence (exit 1) when no roll runs.
func (c *Client) StopRoll(ctx context.Context) error {
	a, err := c.api.StopRoll(ctx)
	return c.showRoll(a, err)
}

func (c *Client) showRoll(a Answer[mcribapi.RollDoc], err error) error {
	return show(c, a, err, func(a Answer[mcribapi.RollDoc]) { printRoll(c.stdout, a.Doc.Roll, c.now()) })
}

// printRoll writes the roll entry; nil means none.
func printRoll(w io.Writer, e *mcribapi.RollEntry, now time.Time) {
	if e == nil {
		fmt.Fprintln(w, "no roll under way")
		return
	}
	fmt.Fprintf(w, "roll: %s\n", rollProgress(e))
	fmt.Fprintf(w, "  reason: %s (by %s, %s); a restart awaited up to %s each\n", orUnknown(e.Reason), orUnknown(e.By), whenText(e.At, now), orUnknown(e.RestartTimeout))
	if e.Blocked != "" {
		fmt.Fprintf(w, "  %s: %s\n", e.State, e.Blocked)
	}
	for _, n := range e.Nodes {
		fmt.Fprintf(w, "  %s\n", rollNodeLine(n, now))
	}
}

// rollProgress is the entry's state and counts in words.
func rollProgress(e *mcribapi.RollEntry) string {
	done := e.Count(mcribapi.RollRestarted) + e.Count(mcribapi.RollSkipped)
	counts := fmt.Sprintf("%d of %d nodes restarted", e.Count(mcribapi.RollRestarted), len(e.Nodes))
	if n := e.Count(mcribapi.RollSkipped); n > 0 {
		counts += fmt.Sprintf(", %d skipped", n)
	}
	switch e.State {
	case mcribapi.RollDone:
		return "done: " + counts
	case mcribapi.RollStopped:
		return fmt.Sprintf("stopped: %s; %d stay where they are", counts, len(e.Nodes)-done)
	}
	return orUnknown(string(e.State)) + ": " + counts
}

// rollNodeLine is one node of the roll as a person reads it; a zero now
// leaves out when a released node was released.
func rollNodeLine(n mcribapi.RollNode, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %s", n.State, n.NodeID)
	if n.AZ != "" {
		fmt.Fprintf(&b, " (zone %s)", n.AZ)
	}
	if n.Slot != nil {
		fmt.Fprintf(&b, ", slot %d", *n.Slot)
		if n.To != "" {
			fmt.Fprintf(&b, " to %s", n.To)
		}
	}
	switch {
	case n.State == mcribapi.RollReleased && n.ReleasedAt != nil && !now.IsZero():
		fmt.Fprintf(&b, ", released %s: restart it now", whenText(*n.ReleasedAt, now))
	case n.State == mcribapi.RollReleased:
		b.WriteString(": restart it now")
	}
	return b.String()
}

// rollFacts are the status lines of the roll.
func rollFacts(s mcribapi.Status) [][2]string {
	e := s.Roll
	if e == nil {
		return nil
	}
	out := [][2]string{{"roll", rollProgress(e)}}
	if e.Blocked != "" {
		out = append(out, [2]string{"roll " + string(e.State), e.Blocked})
	}
	for _, n := range e.Nodes {
		if n.State == mcribapi.RollReleased || n.State == mcribapi.RollMoving {
			out = append(out, [2]string{"roll " + string(n.State), rollNodeLine(n, time.Time{})})
		}
	}
	return out
}

// ErrRollNotDone is RollExec's error when the roll ended blocked or
// stopped (exit 1).
var ErrRollNotDone = errors.New("the roll is not done")
