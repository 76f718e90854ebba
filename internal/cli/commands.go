package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// The client commands: each makes its call to the operator API and prints
// the answer, as it came with Options.JSON, else through its renderer.
// Their arguments are checked already (the command line's usage errors).

// read runs a read-only command: GET path, then print the answer raw for
// JSON, else through show.
func (c *Client) read(ctx context.Context, path string, show func(body []byte) error) error {
	b, err := c.Get(ctx, path)
	if err != nil {
		return err
	}
	if c.opts.JSON {
		c.printRaw(b)
		return nil
	}
	return show(b)
}

// printRaw writes a JSON answer as it came, ending in a newline.
func (c *Client) printRaw(b []byte) {
	c.stdout.Write(b)
	if len(b) == 0 || b[len(b)-1] != '\n' {
		fmt.Fprintln(c.stdout)
	}
}

// Status prints GET /v1/status: the pool, then one line per node and what
// each waits for, and the zones.
func (c *Client) Status(ctx context.Context) error {
	return c.read(ctx, "/v1/status", func(b []byte) error {
		var doc mcribapi.Status
		sent, err := decodeDocument(b, &doc)
		if err != nil {
			return fmt.Errorf("reading the status document: %w", err)
		}
		printStatus(c.stdout, doc, sent, c.now())
		return nil
	})
}

// Slots prints GET /v1/slotmap.
func (c *Client) Slots(ctx context.Context) error {
	return c.read(ctx, "/v1/slotmap", func(b []byte) error {
		m, err := cachenodes.ParseSlotMap(b)
		if err != nil {
			return fmt.Errorf("reading the slot map document: %w", err)
		}
		printSlots(c.stdout, m, c.now())
		return nil
	})
}

// Freeze sends PUT /v1/freeze with reason, after checking that the pool is
// not frozen by another operator already (whose reason the freeze would
// replace) unless force is set.
func (c *Client) Freeze(ctx context.Context, reason string, force bool) error {
	if !force {
		if err := c.notFrozenByOther(ctx); err != nil {
			return err
		}
	}
	b, err := c.put(ctx, "/v1/freeze", mcribapi.FreezeRequest{Reason: reason})
	if err != nil {
		return err
	}
	if c.opts.JSON {
		c.printRaw(b)
		return nil
	}
	var doc mcribapi.FreezeDoc
	if json.Unmarshal(b, &doc) != nil || doc.Reason == "" {
		doc.Reason = reason
	}
	printFrozen(c.stdout, doc)
	return nil
}

// notFrozenByOther returns an error (exit 1) naming who froze the pool,
// when, and why, when another operator than this client's froze it.
func (c *Client) notFrozenByOther(ctx context.Context) error {
	b, err := c.Get(ctx, "/v1/status")
	if err != nil {
		return err
	}
	var st struct {
		Frozen bool                `json:"frozen"`
		Freeze *mcribapi.FreezeDoc `json:"freeze"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("reading the status document: %w", err)
	}
	if !st.Frozen || st.Freeze == nil || st.Freeze.By == c.opts.Who {
		return nil
	}
	return fmt.Errorf("the pool is frozen already, by %s %s: %q. Not changed: mcrib freeze --force replaces that freeze and its reason, mcrib unfreeze lifts it",
		orUnknown(st.Freeze.By), whenText(st.Freeze.At, c.now()), st.Freeze.Reason)
}

// Unfreeze sends DELETE /v1/freeze.
func (c *Client) Unfreeze(ctx context.Context) error {
	b, err := c.delete(ctx, "/v1/freeze")
	if err != nil {
		return err
	}
	if c.opts.JSON {
		c.printRaw(b)
		return nil
	}
	fmt.Fprintln(c.stdout, "unfrozen")
	return nil
}

// RateLimit prints GET /v1/ratelimit, or with a change sends it as PUT
// /v1/ratelimit and prints the new document.
func (c *Client) RateLimit(ctx context.Context, change *mcribapi.BootLimitRequest) error {
	var b []byte
	var err error
	if change == nil {
		b, err = c.Get(ctx, "/v1/ratelimit")
	} else {
		b, err = c.put(ctx, "/v1/ratelimit", change)
	}
	if err != nil {
		return err
	}
	if c.opts.JSON {
		c.printRaw(b)
		return nil
	}
	var doc ratelimit.Document
	sent, err := decodeDocument(b, &doc)
	if err != nil {
		return fmt.Errorf("reading the boot-limit document: %w", err)
	}
	printRateLimit(c.stdout, doc, sent)
	return nil
}

// Zones prints the zones of GET /v1/status, one line each; with JSON the
// status document's "zones" array as it came.
func (c *Client) Zones(ctx context.Context) error {
	b, err := c.Get(ctx, "/v1/status")
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
	if c.opts.JSON {
		raw := []byte(strings.TrimSpace(string(doc.Zones)))
		if len(raw) == 0 || string(raw) == "null" {
			raw = []byte("[]")
		}
		c.printRaw(raw)
		return nil
	}
	var zones []mcribapi.ZoneStatus
	if len(doc.Zones) > 0 {
		if err := json.Unmarshal(doc.Zones, &zones); err != nil {
			return fmt.Errorf("reading the zones of the status document: %w", err)
		}
	}
	printZones(c.stdout, zones, doc.ZoneAlert, c.now())
	return nil
}

// Drain sends PUT /v1/drain/ZONE with req and prints the zone's entry.
func (c *Client) Drain(ctx context.Context, zone string, req mcribapi.DrainRequest) error {
	b, err := c.put(ctx, "/v1/drain/"+url.PathEscape(zone), req)
	if err != nil {
		return err
	}
	return c.printDrainAnswer(b, zone)
}

// Undrain sends DELETE /v1/drain/ZONE and prints the zone's entry.
func (c *Client) Undrain(ctx context.Context, zone string) error {
	b, err := c.delete(ctx, "/v1/drain/"+url.PathEscape(zone))
	if err != nil {
		return err
	}
	return c.printDrainAnswer(b, zone)
}

// printDrainAnswer prints zone's entry of a drain document, or the whole
// answer as it came for JSON.
func (c *Client) printDrainAnswer(b []byte, zone string) error {
	if c.opts.JSON {
		c.printRaw(b)
		return nil
	}
	var doc mcribapi.DrainDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("reading the drain document: %w", err)
	}
	printDrainEntry(c.stdout, zone, doc.Zones[zone], c.now())
	return nil
}

// Replace sends POST /v1/nodes/NODE/replace with reason and prints the
// move.
func (c *Client) Replace(ctx context.Context, node, reason string) error {
	b, err := c.post(ctx, "/v1/nodes/"+url.PathEscape(node)+"/replace", mcribapi.ReplaceRequest{Reason: reason})
	if err != nil {
		return err
	}
	if c.opts.JSON {
		c.printRaw(b)
		return nil
	}
	var res mcribapi.ReplaceAnswer
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("reading the answer of the replace: %w", err)
	}
	printReplace(c.stdout, res)
	return nil
}
