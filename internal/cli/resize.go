package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The resize commands (docs/cli.md, "mcrib resize").

// Resize prints GET /v1/resize as a person reads it ("no resize under way"
// when there is none); --json prints it raw.
func (c *Client) Resize(ctx context.Context) error {
	a, err := c.api.Resize(ctx)
	return c.showResize(a, err)
}

// StartResize sends PUT /v1/resize with req and prints the entry.
func (c *Client) StartResize(ctx context.Context, req mcribapi.ResizeRequest) error {
	a, err := c.api.StartResize(ctx, req)
	return c.showResize(a, err)
}

// StopResize sends DELETE /v1/resize and prints the entry; the server's
// sentence (exit 1) when no resize runs.
func (c *Client) StopResize(ctx context.Context) error {
	a, err := c.api.StopResize(ctx)
	return c.showResize(a, err)
}

func (c *Client) showResize(a Answer[mcribapi.ResizeDoc], err error) error {
	return show(c, a, err, func(a Answer[mcribapi.ResizeDoc]) { printResize(c.stdout, a.Doc.Resize, c.now()) })
}

// printResize writes the resize entry; nil means none.
func printResize(w io.Writer, e *mcribapi.ResizeEntry, now time.Time) {
	if e == nil {
		fmt.Fprintln(w, "no resize under way")
		return
	}
	fmt.Fprintf(w, "resize from %d to %d slots: %s\n", e.From, e.To, resizeProgress(e))
	fmt.Fprintf(w, "  pace: %d%% of the twins (%s) every %s", e.StepPercent, countOfTwins(e.StepSize()), orUnknown(e.StepInterval))
	if e.LastStepAt != nil && !e.LastStepAt.IsZero() {
		fmt.Fprintf(w, ", last step %s", whenText(*e.LastStepAt, now))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  reason: %s (by %s, %s)\n", orUnknown(e.Reason), orUnknown(e.By), whenText(e.At, now))
	if e.Blocked != "" {
		fmt.Fprintf(w, "  blocked: %s\n", e.Blocked)
	}
	if e.Warning != "" {
		fmt.Fprintf(w, "  warning: %s\n", e.Warning)
	}
}

// resizeProgress is the entry's state and counts in words.
func resizeProgress(e *mcribapi.ResizeEntry) string {
	counts := fmt.Sprintf("%d of %d twins split, %d left", e.Split, e.From, e.Twins)
	switch e.State {
	case mcribapi.ResizeDone:
		return "done: every twin is split (warmings may still run)"
	case mcribapi.ResizeStopped:
		return "stopped: " + counts + " (they stay twins; mcrib resize --slots " + fmt.Sprint(e.To) + " resumes)"
	case mcribapi.ResizePaused:
		return "paused by an operator freeze: " + counts
	}
	return orUnknown(string(e.State)) + ": " + counts
}

func countOfTwins(n int) string {
	if n == 1 {
		return "1 twin"
	}
	return fmt.Sprintf("%d twins", n)
}

// resizeFacts are the status lines of the resize and the capacity.
func resizeFacts(s mcribapi.Status) [][2]string {
	var out [][2]string
	if e := s.Resize; e != nil {
		out = append(out, [2]string{"resize", fmt.Sprintf("from %d to %d slots, %s", e.From, e.To, resizeProgress(e))})
		if e.Blocked != "" {
			out = append(out, [2]string{"resize blocked", e.Blocked})
		}
	}
	if c := s.Capacity; c != nil {
		v := fmt.Sprintf("%d slots, %d present nodes outside drained zones, %d ready spares", c.Slots, c.Nodes, c.SparesReady)
		if c.SparesFor != nil {
			v += fmt.Sprintf("; more than a quarter of the nodes have been ready spares for %s (mcrib resize --slots %d grows the pool)", *c.SparesFor, 2*c.Slots)
		}
		out = append(out, [2]string{"capacity", v})
	}
	return out
}
