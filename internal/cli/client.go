package cli

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Options configures New. The command line fills it from the client
// flags and the environment.
type Options struct {
	// APIOptions say where the API is and how to call it.
	APIOptions
	// Stdout takes what a command prints, Stderr its notes (events' restart
	// notice); nil discards.
	Stdout, Stderr io.Writer
	// Now is the clock of "2 s ago"; nil is time.Now.
	Now func() time.Time
	// JSON prints the server's answers as they came (--json) instead of
	// as text.
	JSON bool
	// FollowEvery is how often Events asks for new events when it
	// follows; 0 is every second.
	FollowEvery time.Duration
}

// Client runs the client commands against one mcrib, one file each
// (status.go, slots.go, freeze.go, ratelimit.go, zones.go, drain.go,
// replace.go, events.go, resize.go): each makes its calls through the
// typed API and prints the answer, as text or as the JSON that came. The
// command line has checked their arguments already (its usage errors).
// Build one with New and Close it when done. It is safe for concurrent
// use.
type Client struct {
	opts   Options
	api    *API
	stdout io.Writer
	stderr io.Writer
	now    func() time.Time
}

// New returns the client opts describes.
func New(opts Options) *Client {
	if opts.FollowEvery <= 0 {
		opts.FollowEvery = time.Second
	}
	c := &Client{opts: opts, api: NewAPI(opts.APIOptions), stdout: opts.Stdout, stderr: opts.Stderr, now: opts.Now}
	if c.stdout == nil {
		c.stdout = io.Discard
	}
	if c.stderr == nil {
		c.stderr = io.Discard
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// API returns the typed client the commands call through.
func (c *Client) API() *API { return c.api }

// Close drops the client's idle connections.
func (c *Client) Close() { c.api.Close() }

// show prints the answer of a call that returned err: with Options.JSON
// the body as it came (one that does not read as its document too), else
// the document through text.
func show[T any](c *Client, a Answer[T], err error, text func(Answer[T])) error {
	var unreadable *DocumentError
	switch {
	case c.opts.JSON && (err == nil || errors.As(err, &unreadable)):
		c.printRaw(a.Body)
		return nil
	case err != nil:
		return err
	}
	text(a)
	return nil
}

// printRaw writes a JSON answer as it came, ending in a newline.
func (c *Client) printRaw(b []byte) {
	c.stdout.Write(b)
	if len(b) == 0 || b[len(b)-1] != '\n' {
		fmt.Fprintln(c.stdout)
	}
}
