package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The resize commands (docs/cli.md, "mcrib resize").

// Resize prints GET /v1/resize as a person reads it ("no resize under way"
// when there is none); --json prints it raw.
func (c *Client) Resize(ctx context.Context) error {
	return c.read(ctx, "/v1/resize", c.showResize)
}

// StartResize sends PUT /v1/resize with req and prints the entry.
func (c *Client) StartResize(ctx context.Context, req mcribapi.ResizeRequest) error {
	b, err := c.put(ctx, "/v1/resize", req)
	if err != nil {
		return err
	}
	if c.opts.JSON {
		c.printRaw(b)
		return nil
	}
	return c.showResize(b)
}

// StopResize sends DELETE /v1/resize and prints the entry; the server's
// sentence (exit 1) when no resize runs.
func (c *Client) StopResize(ctx context.Context) error {
	b, err := c.delete(ctx, "/v1/resize")
	if err != nil {
		return err
	}
	if c.opts.JSON {
		c.printRaw(b)
		return nil
	}
	return c.showResize(b)
}

func (c *Client) showResize(b []byte) error {
	var doc mcribapi.ResizeDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("reading the resize document: %w", err)
	}
	printResize(c.stdout, doc.Resize, c.now())
	return nil
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
