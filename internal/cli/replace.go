package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The replace command (docs/cli.md, "Commands").

// Replace sends POST /v1/nodes/NODE/replace with reason and prints the
// move.
func (c *Client) Replace(ctx context.Context, node, reason string) error {
	a, err := c.api.Replace(ctx, node, mcribapi.ReplaceRequest{Reason: reason})
	return show(c, a, err, func(a Answer[mcribapi.ReplaceAnswer]) { printReplace(c.stdout, a.Doc) })
}

// printReplace writes the outcome of a replace.
func printReplace(w io.Writer, r mcribapi.ReplaceAnswer) {
	// The answer says only warm or not: a cold move is either an old
	// holder that did not answer or warm moves turned off.
	how := "cold (" + orUnknown(r.From) + " did not answer, or --warm-for is 0s): the slot starts empty"
	if r.Warm {
		how = "warm: " + orUnknown(r.From) + " stays the slot's warm source until --warm-for passes"
	}
	fmt.Fprintf(w, "slot %d: from %s to %s (%s)\n", r.Slot, orUnknown(r.From), orUnknown(r.To), how)
	if !r.ServesAt.IsZero() {
		// The move is announced: the new node is flushed and serves the
		// slot from serves_at (docs/api.md, "Announce, then serve").
		fmt.Fprintf(w, "announced: %s serves slot %d from %s\n", orUnknown(r.To), r.Slot, r.ServesAt.UTC().Format(time.RFC3339))
	}
	if r.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", r.Warning)
	}
}
