package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The zones command (docs/cli.md, "Commands").

// Zones prints the zones of GET /v1/status, one line each; with JSON the
// status document's "zones" array as it came.
func (c *Client) Zones(ctx context.Context) error {
	a, err := c.api.Status(ctx)
	if err != nil {
		return err
	}
	if c.opts.JSON {
		var doc struct {
			Zones json.RawMessage `json:"zones"`
		}
		_ = json.Unmarshal(a.Body, &doc) // it read as the status document
		raw := []byte(strings.TrimSpace(string(doc.Zones)))
		if len(raw) == 0 || string(raw) == "null" {
			raw = []byte("[]")
		}
		c.printRaw(raw)
		return nil
	}
	printZones(c.stdout, a.Doc.Zones, a.Doc.ZoneAlert, c.now())
	return nil
}

// printZones writes one line per zone, then the zone alert when there is
// one; now tells when a drain's next step is due.
func printZones(w io.Writer, zones []mcribapi.ZoneStatus, alert string, now time.Time) {
	if len(zones) == 0 {
		fmt.Fprintln(w, "no zones")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ZONE\tNODES\tSLOTS\tUNREACHABLE\tABSENT\tHIT RATE\tDRAIN")
		for _, z := range zones {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", zoneName(z.Zone), z.Nodes, z.Slots, z.Unreachable, z.Absent,
				knownHitRate(true, z.HitRate), drainCell(z.Drain, now))
		}
		tw.Flush()
	}
	if alert != "" {
		fmt.Fprintf(w, "\nALERT: %s\n", alert)
	}
}
