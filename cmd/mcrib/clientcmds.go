package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/ratelimit"
)

// The client commands: each parses its arguments, makes one call to the
// operator API and prints the answer, raw with --json or through its
// renderer.

// read runs a read-only command that takes only --json and --addr: GET
// path, then print the answer raw for --json, else through show.
func (c cli) read(ctx context.Context, cmd, path string, args []string, show func(body []byte) error) error {
	fs, addr := clientFlags(cmd)
	asJSON := fs.Bool("json", false, "print the raw JSON document")
	cl, err := c.connectNoArgs(fs, addr, args)
	if err != nil {
		return err
	}
	defer cl.close()
	b, err := cl.get(ctx, path)
	if err != nil {
		return err
	}
	if *asJSON {
		c.printRaw(b)
		return nil
	}
	return show(b)
}

// printRaw writes a JSON answer as it came, ending in a newline.
func (c cli) printRaw(b []byte) {
	c.stdout.Write(b)
	if len(b) == 0 || b[len(b)-1] != '\n' {
		fmt.Fprintln(c.stdout)
	}
}

// status prints GET /v1/status.
func (c cli) status(ctx context.Context, args []string) error {
	return c.read(ctx, "status", "/v1/status", args, func(b []byte) error {
		var doc statusDocument
		sent, err := decodeDocument(b, &doc)
		if err != nil {
			return fmt.Errorf("reading the status document: %w", err)
		}
		printStatus(c.stdout, doc, sent)
		return nil
	})
}

// slots prints GET /v1/slotmap.
func (c cli) slots(ctx context.Context, args []string) error {
	return c.read(ctx, "slots", "/v1/slotmap", args, func(b []byte) error {
		m, err := cachenodes.ParseSlotMap(b)
		if err != nil {
			return fmt.Errorf("reading the slot map document: %w", err)
		}
		printSlots(c.stdout, m)
		return nil
	})
}

// freeze sends PUT /v1/freeze.
func (c cli) freeze(ctx context.Context, args []string) error {
	fs, addr := clientFlags("freeze")
	reason := fs.String("reason", "", "why membership is frozen (required)")
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("unexpected argument %q", pos[0])
	}
	if strings.TrimSpace(*reason) == "" {
		return usageError("--reason is required and must not be empty")
	}
	cl, err := newClient(*addr, c.getenv)
	if err != nil {
		return err
	}
	defer cl.close()
	b, err := cl.put(ctx, "/v1/freeze", map[string]string{"reason": *reason})
	if err != nil {
		return err
	}
	var doc controlloop.FreezeDoc
	if json.Unmarshal(b, &doc) != nil || doc.Reason == "" {
		doc.Reason = *reason
	}
	printFrozen(c.stdout, doc.Reason)
	return nil
}

// unfreeze sends DELETE /v1/freeze.
func (c cli) unfreeze(ctx context.Context, args []string) error {
	fs, addr := clientFlags("unfreeze")
	cl, err := c.connectNoArgs(fs, addr, args)
	if err != nil {
		return err
	}
	defer cl.close()
	if _, err := cl.delete(ctx, "/v1/freeze"); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "unfrozen")
	return nil
}

// rateLimitRequest is the body of PUT /v1/ratelimit (ratelimit.Setting as
// ratelimit.ParseSetting reads it; a field left nil is not sent).
type rateLimitRequest struct {
	Mode  string   `json:"mode"`
	Limit *float64 `json:"limit,omitempty"`
	Burst *int     `json:"burst,omitempty"`
}

// ratelimit prints GET /v1/ratelimit, or changes it with `set N` or `auto`.
func (c cli) ratelimit(ctx context.Context, args []string) error {
	fs, addr := clientFlags("ratelimit")
	asJSON := fs.Bool("json", false, "print the raw boot-limit document")
	burst := fs.Int("burst", 0, "bucket size, whole boots >= 1 (with set or auto)")
	explainFlag(fs, "burst", errNotInteger)
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return err
	}
	req, err := rateLimitChange(pos)
	if err != nil {
		return err
	}
	switch burstGiven := given(fs, "burst"); {
	case burstGiven && req == nil:
		return usageError("--burst goes with set or auto")
	case burstGiven && *burst < 1:
		return usageError("--burst must be a whole number of at least 1, got %q", strconv.Itoa(*burst))
	case burstGiven:
		req.Burst = burst
	}

	cl, err := newClient(*addr, c.getenv)
	if err != nil {
		return err
	}
	defer cl.close()
	var b []byte
	if req == nil {
		b, err = cl.get(ctx, "/v1/ratelimit")
	} else {
		b, err = cl.put(ctx, "/v1/ratelimit", req)
	}
	if err != nil {
		return err
	}
	if *asJSON {
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

// rateLimitChange reads the positional arguments of `mcrib ratelimit`: none
// (a read, nil), `set N` or `auto`.
func rateLimitChange(pos []string) (*rateLimitRequest, error) {
	switch {
	case len(pos) == 0:
		return nil, nil
	case pos[0] == "set":
		if len(pos) < 2 {
			return nil, usageError("set needs a limit in boots/s")
		}
		if len(pos) > 2 {
			return nil, usageError("unexpected argument %q", pos[2])
		}
		n, err := strconv.ParseFloat(pos[1], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, usageError("set: limit %q is not a number", pos[1])
		}
		if n < 0 {
			return nil, usageError("set: limit must not be negative, got %s", pos[1])
		}
		return &rateLimitRequest{Mode: ratelimit.ModeManual, Limit: &n}, nil
	case pos[0] == "auto":
		if len(pos) > 1 {
			return nil, usageError("unexpected argument %q", pos[1])
		}
		return &rateLimitRequest{Mode: ratelimit.ModeAuto}, nil
	}
	return nil, usageError("unknown subcommand %q (want set or auto)", pos[0])
}

// version prints the version.
func (c cli) version(_ context.Context, args []string) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			return flag.ErrHelp
		}
		return usageError("unexpected argument %q", args[0])
	}
	fmt.Fprintf(c.stdout, "mcrib %s\n", version)
	return nil
}
