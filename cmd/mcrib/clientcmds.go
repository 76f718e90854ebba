package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/ratelimit"
)

// The client commands: each parses its arguments, makes one call to the
// operator API and prints the answer, raw with --json or through its
// renderer.

// read runs a read-only command that takes only the client flags: GET
// path, then print the answer raw for --json, else through show.
func (c cli) read(ctx context.Context, cmd, path string, args []string, show func(body []byte) error) error {
	fs, o := clientFlags(cmd)
	cl, err := c.connectNoArgs(fs, o, args)
	if err != nil {
		return err
	}
	defer cl.close()
	b, err := cl.get(ctx, path)
	if err != nil {
		return err
	}
	if o.json {
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
		printStatus(c.stdout, doc, sent, c.now())
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
		printSlots(c.stdout, m, c.now())
		return nil
	})
}

// freeze sends PUT /v1/freeze, after checking that the pool is not frozen
// by another operator already (whose reason the freeze would replace)
// unless --force is given.
func (c cli) freeze(ctx context.Context, args []string) error {
	fs, o := clientFlags("freeze")
	reason := fs.String("reason", "", "why membership is frozen, up to 512 characters (required)")
	force := fs.Bool("force", false, "replace a freeze that another operator set")
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
	cl, err := c.connect(o)
	if err != nil {
		return err
	}
	defer cl.close()
	if !*force {
		if err := c.notFrozenByOther(ctx, cl); err != nil {
			return err
		}
	}
	b, err := cl.put(ctx, "/v1/freeze", map[string]string{"reason": *reason})
	if err != nil {
		return err
	}
	if o.json {
		c.printRaw(b)
		return nil
	}
	var doc controlloop.FreezeDoc
	if json.Unmarshal(b, &doc) != nil || doc.Reason == "" {
		doc.Reason = *reason
	}
	printFrozen(c.stdout, doc)
	return nil
}

// notFrozenByOther returns an error (exit 1) naming who froze the pool,
// when, and why, when another operator than cl's froze it.
func (c cli) notFrozenByOther(ctx context.Context, cl *apiClient) error {
	b, err := cl.get(ctx, "/v1/status")
	if err != nil {
		return err
	}
	var st struct {
		Frozen bool                   `json:"frozen"`
		Freeze *controlloop.FreezeDoc `json:"freeze"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("reading the status document: %w", err)
	}
	if !st.Frozen || st.Freeze == nil || st.Freeze.By == cl.who {
		return nil
	}
	return fmt.Errorf("the pool is frozen already, by %s %s: %q. Not changed: mcrib freeze --force replaces that freeze and its reason, mcrib unfreeze lifts it",
		orUnknown(st.Freeze.By), whenText(st.Freeze.At, c.now()), st.Freeze.Reason)
}

// unfreeze sends DELETE /v1/freeze.
func (c cli) unfreeze(ctx context.Context, args []string) error {
	fs, o := clientFlags("unfreeze")
	cl, err := c.connectNoArgs(fs, o, args)
	if err != nil {
		return err
	}
	defer cl.close()
	b, err := cl.delete(ctx, "/v1/freeze")
	if err != nil {
		return err
	}
	if o.json {
		c.printRaw(b)
		return nil
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
	fs, o := clientFlags("ratelimit")
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

	cl, err := c.connect(o)
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
	if o.json {
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
	return nil, usageError("unknown subcommand %q%s (want set or auto)", pos[0], didYouMean(pos[0], []string{"set", "auto"}, ""))
}

// version prints the version.
func (c cli) version(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("mcrib version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	asJSON := fs.Bool("json", false, "print the version as JSON: {\"version\": \"…\", \"go\": \"…\"}")
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("unexpected argument %q", pos[0])
	}
	if *asJSON {
		b, err := json.Marshal(struct {
			Version string `json:"version"`
			Go      string `json:"go"`
		}{version, runtime.Version()})
		if err != nil {
			return err
		}
		c.printRaw(b)
		return nil
	}
	fmt.Fprintf(c.stdout, "mcrib %s\n", version)
	return nil
}
