package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mcrib/mcrib/controlloop"
)

// The zone commands: zones, drain, undrain and replace.

// zones prints the zones of GET /v1/status, one line each; --json prints
// the status document's "zones" array as it came.
func (c cli) zones(ctx context.Context, args []string) error {
	fs, o := clientFlags("zones")
	fs.Lookup("json").Usage = "print the status document's array of zones as it came"
	cl, err := c.connectNoArgs(fs, o, args)
	if err != nil {
		return err
	}
	defer cl.close()
	b, err := cl.get(ctx, "/v1/status")
	if err != nil {
		return err
	}
	var doc struct {
		Zones     json.RawMessage `json:"zones"`
		ZoneAlert string          `json:"zone_alert"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("reading the status document: %w", err)
	}
	if o.json {
		raw := []byte(strings.TrimSpace(string(doc.Zones)))
		if len(raw) == 0 || string(raw) == "null" {
			raw = []byte("[]")
		}
		c.printRaw(raw)
		return nil
	}
	var zones []controlloop.ZoneStatus
	if len(doc.Zones) > 0 {
		if err := json.Unmarshal(doc.Zones, &zones); err != nil {
			return fmt.Errorf("reading the zones of the status document: %w", err)
		}
	}
	printZones(c.stdout, zones, doc.ZoneAlert, c.now())
	return nil
}

// drainRequest is the body of PUT /v1/drain/{zone}; a field left nil is
// not sent, so that the server's default applies.
type drainRequest struct {
	Reason       string  `json:"reason"`
	Percent      *int    `json:"percent,omitempty"`
	StepPercent  *int    `json:"step_percent,omitempty"`
	StepInterval *string `json:"step_interval,omitempty"`
}

// drain sends PUT /v1/drain/ZONE and prints the zone's entry.
func (c cli) drain(ctx context.Context, args []string) error {
	fs, o := clientFlags("drain")
	reason := fs.String("reason", "", "why the zone is drained, up to 512 characters (required)")
	percent := fs.Int("percent", 0, "share of the zone's slots to move off it, `P` from 1 to 100 (server default 100)")
	step := fs.Int("step", 0, "share of the zone's slots one step moves, `S` from 1 to 100 (server default 10)")
	every := fs.String("every", "", "time between steps, a duration `D` from 1s to 1h (server default 30s)")
	explainFlag(fs, "percent", errNotInteger)
	explainFlag(fs, "step", errNotInteger)
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return err
	}
	zone, err := onePositional(pos, "ZONE")
	if err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usageError("--reason is required and must not be empty")
	}
	req := drainRequest{Reason: *reason}
	if given(fs, "percent") {
		req.Percent = percent
	}
	if given(fs, "step") {
		req.StepPercent = step
	}
	if given(fs, "every") {
		if _, err := time.ParseDuration(*every); err != nil {
			return usageError("invalid value %q for --every: not a duration (like 30s, 1m or 1m30s)", *every)
		}
		req.StepInterval = every
	}
	cl, err := c.connect(o)
	if err != nil {
		return err
	}
	defer cl.close()
	b, err := cl.put(ctx, "/v1/drain/"+url.PathEscape(zone), req)
	if err != nil {
		return err
	}
	return c.printDrainAnswer(b, zone, o.json)
}

// undrain sends DELETE /v1/drain/ZONE and prints the zone's entry.
func (c cli) undrain(ctx context.Context, args []string) error {
	fs, o := clientFlags("undrain")
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return err
	}
	zone, err := onePositional(pos, "ZONE")
	if err != nil {
		return err
	}
	cl, err := c.connect(o)
	if err != nil {
		return err
	}
	defer cl.close()
	b, err := cl.delete(ctx, "/v1/drain/"+url.PathEscape(zone))
	if err != nil {
		return err
	}
	return c.printDrainAnswer(b, zone, o.json)
}

// printDrainAnswer prints zone's entry of a drain document, or the whole
// answer as it came for --json.
func (c cli) printDrainAnswer(b []byte, zone string, asJSON bool) error {
	if asJSON {
		c.printRaw(b)
		return nil
	}
	var doc controlloop.DrainDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("reading the drain document: %w", err)
	}
	printDrainEntry(c.stdout, zone, doc.Zones[zone], c.now())
	return nil
}

// replace sends POST /v1/nodes/NODE/replace and prints the move.
func (c cli) replace(ctx context.Context, args []string) error {
	fs, o := clientFlags("replace")
	reason := fs.String("reason", "", "why the node is replaced, up to 512 characters (required)")
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return err
	}
	node, err := onePositional(pos, "NODE")
	if err != nil {
		return err
	}
	if strings.TrimSpace(*reason) == "" {
		return usageError("--reason is required and must not be empty")
	}
	cl, err := c.connect(o)
	if err != nil {
		return err
	}
	defer cl.close()
	b, err := cl.post(ctx, "/v1/nodes/"+url.PathEscape(node)+"/replace", map[string]string{"reason": *reason})
	if err != nil {
		return err
	}
	if o.json {
		c.printRaw(b)
		return nil
	}
	var res controlloop.ReplaceResult
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("reading the answer of the replace: %w", err)
	}
	printReplace(c.stdout, res)
	return nil
}

// onePositional returns the one positional argument a command takes,
// named what in its usage; none or more is a usage error.
func onePositional(pos []string, what string) (string, error) {
	switch {
	case len(pos) == 0:
		return "", usageError("missing %s", what)
	case len(pos) > 1:
		return "", usageError("unexpected argument %q", pos[1])
	case strings.TrimSpace(pos[0]) == "":
		return "", usageError("%s must not be empty", what)
	}
	return pos[0], nil
}
