package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The drain and undrain commands (docs/cli.md, "Commands").

// Drain sends PUT /v1/drain/ZONE with req and prints the zone's entry.
func (c *Client) Drain(ctx context.Context, zone string, req mcribapi.DrainRequest) error {
	a, err := c.api.Drain(ctx, zone, req)
	return c.showDrain(a, err, zone)
}

// Undrain sends DELETE /v1/drain/ZONE and prints the zone's entry.
func (c *Client) Undrain(ctx context.Context, zone string) error {
	a, err := c.api.Undrain(ctx, zone)
	return c.showDrain(a, err, zone)
}

// showDrain prints zone's entry of a drain document, or the whole answer
// as it came for JSON.
func (c *Client) showDrain(a Answer[mcribapi.DrainDoc], err error, zone string) error {
	return show(c, a, err, func(a Answer[mcribapi.DrainDoc]) { printDrainEntry(c.stdout, zone, a.Doc.Zones[zone], c.now()) })
}

// printDrainEntry writes a zone's drain entry as PUT or DELETE
// /v1/drain/{zone} answered it; nil means the zone has no entry any more.
func printDrainEntry(w io.Writer, zone string, e *mcribapi.DrainEntry, now time.Time) {
	if e == nil {
		fmt.Fprintf(w, "zone %s: not drained (it holds its slots again)\n", zone)
		return
	}
	if e.Returning && e.Slots >= e.BaselineSlots {
		fmt.Fprintf(w, "zone %s: back at its baseline of %s; its drain entry goes at the next pass\n", zone, slotCount(e.BaselineSlots))
		return
	}
	fmt.Fprintf(w, "zone %s: %s\n", zone, drainCell(e, now))
	fmt.Fprintf(w, "  pace: %d%% of the zone's slots in steps of %d%% every %s\n", e.Percent, e.StepPercent, orUnknown(e.StepInterval))
	fmt.Fprintf(w, "  reason: %s (by %s, %s)\n", orUnknown(e.Reason), orUnknown(e.By), whenText(e.At, now))
	if e.Warning != "" {
		fmt.Fprintf(w, "  warning: %s\n", e.Warning)
	}
}
