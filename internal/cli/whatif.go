package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The what-if of a drain or a resize (docs/cli.md, "--dry-run"): the
// simulator's prediction, printed; nothing starts.

// WhatIfTimeout bounds a what-if's call: the server simulates for up to
// two minutes.
const WhatIfTimeout = 150 * time.Second

// whatIfBody is the body of POST /v1/whatif: req's fields with "action"
// and, for a drain, "zone".
func whatIfBody(action, zone string, req any) (map[string]any, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("writing the what-if's request: %w", err)
	}
	body := map[string]any{}
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, fmt.Errorf("writing the what-if's request: %w", err)
	}
	body["action"] = action
	if action == mcribapi.WhatIfDrain {
		body["zone"] = zone
	}
	if body["reason"] == "" {
		delete(body, "reason") // optional in a what-if
	}
	return body, nil
}

// WhatIf sends POST /v1/whatif for action (zone: a drain's) with req and
// prints the prediction; --json prints it raw.
func (c *Client) WhatIf(ctx context.Context, action, zone string, req any) error {
	a, err := c.api.WhatIf(ctx, action, zone, req)
	return show(c, a, err, func(a Answer[mcribapi.Prediction]) { printPrediction(c.stdout, a.Doc, zone) })
}

// printPrediction writes a what-if's prediction as a person reads it.
func printPrediction(w io.Writer, p mcribapi.Prediction, zone string) {
	what := p.Action
	if p.Action == mcribapi.WhatIfDrain {
		what = "drain of zone " + zone
	}
	fmt.Fprintf(w, "what-if, the %s (simulated on the pool as it is now; nothing was started):\n", what)
	if p.Blocked != "" {
		fmt.Fprintf(w, "  blocked: %s\n", p.Blocked)
	}
	fmt.Fprintf(w, "  duration: %s (until it is over and no slot warms)\n", orUnknown(p.Duration))
	fmt.Fprintf(w, "  lowest hit rate: %.2f%% (of 5 seconds)\n", 100*p.LowestHitRate)
	fmt.Fprintf(w, "  extra misses: %d (database reads beyond the same time without it)\n", p.ExtraMisses)
	fmt.Fprintf(w, "  lowest boot limit: %s boots/s\n", formatNumber(p.LowestBootLimit))
}
