package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mcrib/mcrib/mcribapi"
)

// The freeze and unfreeze commands (docs/cli.md, "Commands").

// Freeze sends PUT /v1/freeze with reason, after checking that the pool is
// not frozen by another operator already (whose reason the freeze would
// replace) unless force is set.
func (c *Client) Freeze(ctx context.Context, reason string, force bool) error {
	if !force {
		if err := c.notFrozenByOther(ctx); err != nil {
			return err
		}
	}
	a, err := c.api.Freeze(ctx, mcribapi.FreezeRequest{Reason: reason})
	var unreadable *DocumentError
	if errors.As(err, &unreadable) {
		err = nil // printed with the reason sent
	}
	return show(c, a, err, func(a Answer[mcribapi.FreezeDoc]) {
		if a.Doc.Reason == "" {
			a.Doc.Reason = reason
		}
		printFrozen(c.stdout, a.Doc)
	})
}

// notFrozenByOther returns an error (exit 1) naming who froze the pool,
// when, and why, when another operator than this client's froze it.
func (c *Client) notFrozenByOther(ctx context.Context) error {
	a, err := c.api.Status(ctx)
	if err != nil {
		return err
	}
	st := a.Doc
	if !st.Frozen || st.Freeze == nil || st.Freeze.By == c.opts.Who {
		return nil
	}
	return fmt.Errorf("the pool is frozen already, by %s %s: %q. Not changed: mcrib freeze --force replaces that freeze and its reason, mcrib unfreeze lifts it",
		orUnknown(st.Freeze.By), whenText(st.Freeze.At, c.now()), st.Freeze.Reason)
}

// Unfreeze sends DELETE /v1/freeze.
func (c *Client) Unfreeze(ctx context.Context) error {
	a, err := c.api.Unfreeze(ctx)
	return show(c, a, err, func(Answer[mcribapi.FreezeDoc]) { fmt.Fprintln(c.stdout, "unfrozen") })
}

// printFrozen writes the outcome of a freeze: its reason and who froze.
func printFrozen(w io.Writer, doc mcribapi.FreezeDoc) {
	if doc.By == "" {
		fmt.Fprintf(w, "frozen: %s\n", doc.Reason)
		return
	}
	fmt.Fprintf(w, "frozen: %s (by %s)\n", doc.Reason, doc.By)
}
