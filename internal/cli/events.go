package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// Events prints GET /v1/events, one event a line (one line of JSON each
// with Options.JSON); with follow it then asks, every
// Options.FollowEvery until ctx ends, for the events after the last one
// printed.
func (c *Client) Events(ctx context.Context, follow bool) error {
	var since uint64
	for first := true; ; first = false {
		a, err := c.api.Events(ctx, since)
		if err != nil {
			if !first && ctx.Err() != nil {
				return nil
			}
			return err
		}
		evs := a.Doc
		if first && len(evs) == 0 && !c.opts.JSON && !follow {
			fmt.Fprintln(c.stdout, "no events")
		}
		restarted := false
		for _, e := range evs {
			restarted = restarted || (!first && e.Seq <= since)
		}
		if restarted {
			since = 0
			fmt.Fprintln(c.stderr, "mcrib events: the server restarted; its events start again")
		}
		printEvents(c.stdout, evs, c.opts.JSON)
		for _, e := range evs {
			since = max(since, e.Seq)
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.opts.FollowEvery):
		}
	}
}

// printEvents writes events one a line: as JSON, or as time, kind, node,
// who and reason.
func printEvents(w io.Writer, evs []mcribapi.Event, asJSON bool) {
	if asJSON {
		for _, e := range evs {
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, "%s\n", b)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range evs {
		node := orDash(e.Node)
		if e.Slot != nil {
			node += " (slot " + strconv.Itoa(*e.Slot) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.At.UTC().Format(time.RFC3339), e.Kind, node, orDash(e.Who), orDash(e.Reason))
	}
	tw.Flush()
}
