package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// RollExec starts the roll req and stays in the foreground until it is
// done (docs/cli.md, "mcrib roll --exec"): it follows GET /v1/roll every
// Options.FollowEvery, prints each node's change of state, and runs cmd
// through `sh -c` once per node when it first sees it released, with its
// own environment plus MCRIB_NODE_ID, MCRIB_NODE_ADDR and MCRIB_NODE_AZ,
// its output going to the command's stdout and stderr; it waits for cmd
// and kills it at the roll's restart_timeout. It returns nil once the roll
// is done, and an error wrapping ErrRollNotDone when it is blocked or
// stopped. A cmd that exits non-zero, or ctx ending (a signal) before the
// roll is done, first stops the roll (DELETE /v1/roll).
func (c *Client) RollExec(ctx context.Context, req mcribapi.RollRequest, cmd string) error {
	a, err := c.api.StartRoll(ctx, req)
	if err != nil {
		return err
	}
	printRoll(c.stdout, a.Doc.Roll, c.now())
	seen, last := map[string]mcribapi.RollNodeState{}, ""
	ran := map[string]bool{}
	e := a.Doc.Roll
	for {
		if e == nil {
			return fmt.Errorf("%w: the roll is gone (its entry was removed)", ErrRollNotDone)
		}
		c.rollChanges(e, seen, &last)
		for _, n := range e.Nodes {
			if n.State != mcribapi.RollReleased || ran[n.NodeID] {
				continue
			}
			ran[n.NodeID] = true
			if err := c.runForNode(ctx, cmd, n, e.Timeout()); err != nil {
				return c.stopFor(err)
			}
		}
		switch e.State {
		case mcribapi.RollDone:
			fmt.Fprintln(c.stdout, "roll done: "+rollProgress(e))
			return nil
		case mcribapi.RollStopped:
			return fmt.Errorf("%w: %s", ErrRollNotDone, rollProgress(e))
		case mcribapi.RollBlocked:
			return fmt.Errorf("%w: it is blocked: %s", ErrRollNotDone, e.Blocked)
		}
		select {
		case <-ctx.Done():
			return c.stopFor(fmt.Errorf("interrupted before the roll was done: %w", ctx.Err()))
		case <-time.After(c.opts.FollowEvery):
		}
		a, err := c.api.Roll(ctx)
		switch {
		case ctx.Err() != nil:
			return c.stopFor(fmt.Errorf("interrupted before the roll was done: %w", ctx.Err()))
		case err != nil:
			fmt.Fprintf(c.stderr, "mcrib roll: reading the roll: %v (trying again)\n", err)
			continue
		}
		e = a.Doc.Roll
	}
}

// rollChanges prints each node of e whose state differs from seen, and
// what holds the roll when it differs from last, and notes them.
func (c *Client) rollChanges(e *mcribapi.RollEntry, seen map[string]mcribapi.RollNodeState, last *string) {
	for _, n := range e.Nodes {
		if seen[n.NodeID] != n.State {
			seen[n.NodeID] = n.State
			fmt.Fprintf(c.stdout, "%s  %s\n", timeOr(c.now(), ""), rollNodeLine(n, time.Time{}))
		}
	}
	if now := string(e.State) + ": " + e.Blocked; now != *last {
		*last = now
		if e.Blocked != "" {
			fmt.Fprintf(c.stdout, "%s  roll %s: %s\n", timeOr(c.now(), ""), e.State, e.Blocked)
		}
	}
}

// runForNode runs cmd through sh -c for the released node n, killed after
// timeout, and reports its exit status; an error when it did not exit 0.
func (c *Client) runForNode(ctx context.Context, cmd string, n mcribapi.RollNode, timeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sh := exec.CommandContext(cctx, "sh", "-c", cmd)
	sh.Env = append(os.Environ(), "MCRIB_NODE_ID="+n.NodeID, "MCRIB_NODE_ADDR="+n.Addr, "MCRIB_NODE_AZ="+n.AZ)
	sh.Stdout, sh.Stderr = c.stdout, c.stderr
	fmt.Fprintf(c.stdout, "%s  running for %s (%s): sh -c %q\n", timeOr(c.now(), ""), n.NodeID, n.Addr, cmd)
	start := c.now()
	err := sh.Run()
	took := c.now().Sub(start).Round(time.Millisecond)
	var exit *exec.ExitError
	switch {
	case err == nil:
		fmt.Fprintf(c.stdout, "%s  the command for %s exited 0 after %s\n", timeOr(c.now(), ""), n.NodeID, took)
		return nil
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the command for %s was killed at the restart timeout of %s", n.NodeID, timeout)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted while the command for %s ran: %w", n.NodeID, ctx.Err())
	case errors.As(err, &exit):
		return fmt.Errorf("the command for %s exited with %s after %s", n.NodeID, exit.ProcessState, took)
	}
	return fmt.Errorf("running the command for %s: %w", n.NodeID, err)
}

// stopFor stops the roll because of why, says so, and returns why (exit
// 1).
func (c *Client) stopFor(why error) error {
	fmt.Fprintf(c.stderr, "mcrib roll: %v: stopping the roll\n", why)
	ctx, cancel := context.WithTimeout(context.Background(), c.api.opts.Timeout)
	defer cancel()
	a, err := c.api.StopRoll(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v, and stopping it failed: %v", ErrRollNotDone, why, err)
	}
	printRoll(c.stdout, a.Doc.Roll, c.now())
	return fmt.Errorf("%w: %v; the roll is stopped", ErrRollNotDone, why)
}
