package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// The ratelimit command (docs/cli.md, "Commands").

// RateLimit prints GET /v1/ratelimit, or with a change sends it as PUT
// /v1/ratelimit and prints the new document.
func (c *Client) RateLimit(ctx context.Context, change *mcribapi.BootLimitRequest) error {
	var a Answer[mcribapi.BootLimit]
	var err error
	if change == nil {
		a, err = c.api.BootLimit(ctx)
	} else {
		a, err = c.api.SetBootLimit(ctx, *change)
	}
	return show(c, a, err, func(a Answer[mcribapi.BootLimit]) { printRateLimit(c.stdout, a.Doc, a.sent) })
}

// printRateLimit writes the readable form of the boot-limit document.
func printRateLimit(w io.Writer, b ratelimit.Document, sent sentFields) {
	fmt.Fprintf(w, "mode %s, limit %s boots/s, burst %s, hit rate %s\n", known(sent.has("mode"), orUnknown(b.Mode)),
		known(sent.has("limit"), formatNumber(b.Limit)), known(sent.has("burst"), strconv.Itoa(b.Burst)),
		knownHitRate(sent.has("hit_rate"), b.HitRate))
	reason := b.Reason
	if reason == "" {
		reason = "(none)"
	}
	fmt.Fprintf(w, "reason: %s\n", reason)
}
