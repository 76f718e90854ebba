package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

const (
	// DefaultTimeout bounds each request when Options.Timeout is 0.
	DefaultTimeout = 10 * time.Second
	// maxAnswerBytes bounds how much of an answer the client reads.
	maxAnswerBytes = 16 << 20
	// tokenHint is what an operator does about a call refused with 401.
	tokenHint = "set MCRIB_TOKEN (or --token-file) to the operator token"
	// addrHint is what an operator does about a server that cannot be
	// reached.
	addrHint = "check --addr / MCRIB_ADDR, and whether mcrib serve runs there"
)

// Options configures New. The command line fills it from the client
// flags and the environment.
type Options struct {
	// Addr is the API's base URL without a trailing slash (ParseAddr), and
	// AddrFrom where it came from, for errors: "from --addr", "from
	// MCRIB_ADDR" or "the default address".
	Addr, AddrFrom string
	// Token is the operator token sent as "Authorization: Bearer"; ""
	// sends none. TokenFrom names where it came from ("--token-file",
	// "MCRIB_TOKEN_FILE" or "MCRIB_TOKEN"), for a refused token.
	Token, TokenFrom string
	// Who is the operator's name sent with every change in
	// mcribapi.OperatorHeader; "" sends none.
	Who string
	// Transport carries the requests; nil is http.DefaultTransport.
	Transport http.RoundTripper
	// Timeout bounds each request; 0 is DefaultTimeout.
	Timeout time.Duration
	// UserAgent is sent with every request; "" sends Go's.
	UserAgent string
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

// Client runs the client commands against one mcrib: each sends its call,
// and prints the answer, as text or as the JSON that came. An answer
// outside 2xx is a *ServerError carrying the server's message and what to
// do about it; a failed round trip an error that says what to check. Build
// one with New and Close it when done. It is safe for concurrent use.
type Client struct {
	opts   Options
	http   *http.Client
	stdout io.Writer
	stderr io.Writer
	now    func() time.Time
}

// New returns the client opts describes.
func New(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.FollowEvery <= 0 {
		opts.FollowEvery = time.Second
	}
	c := &Client{opts: opts, http: &http.Client{Timeout: opts.Timeout, Transport: opts.Transport},
		stdout: opts.Stdout, stderr: opts.Stderr, now: opts.Now}
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

// Close drops the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// ParseAddr turns a base URL or a bare host:port into a base URL without a
// trailing slash.
func ParseAddr(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("is empty")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", errors.New("is neither a URL nor host:port")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("has scheme %q, want http or https", u.Scheme)
	case u.Host == "":
		return "", errors.New("has no host")
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", errors.New("must be a plain base URL (no user, query or fragment)")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// ServerError is an answer of the server outside 2xx. A command that
// returns it exits 1 with the server's message and, when there is one, what
// to do about it.
type ServerError struct {
	Code    int    // 401
	Status  string // "401 Unauthorized"
	Message string // the "error" field of the body; "" when the body was not an error document
	Hint    string // what to do about it; "" when the message says it all
}

func (e *ServerError) Error() string {
	s := "server answered " + e.Status
	if e.Message != "" {
		s = e.Message + " (" + e.Status + ")"
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Get sends GET path ("/v1/status") and returns the body of a 2xx
// answer as it came: for a caller that reads a document itself.
func (c *Client) Get(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, nil)
}

// put sends PUT path with in as its JSON body.
func (c *Client) put(ctx context.Context, path string, in any) ([]byte, error) {
	return c.do(ctx, http.MethodPut, path, in)
}

// post sends POST path with in as its JSON body (none when in is nil).
func (c *Client) post(ctx context.Context, path string, in any) ([]byte, error) {
	return c.do(ctx, http.MethodPost, path, in)
}

// delete sends DELETE path without a body.
func (c *Client) delete(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, http.MethodDelete, path, nil)
}

// do sends one request with an optional JSON body and returns the body of a
// 2xx answer. Other answers come back as *ServerError. A change (any
// method but GET) carries the operator's name in mcribapi.OperatorHeader.
func (c *Client) do(ctx context.Context, method, path string, in any) ([]byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.opts.Addr+path, body)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if c.opts.UserAgent != "" {
		req.Header.Set("User-Agent", c.opts.UserAgent)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	if method != http.MethodGet && c.opts.Who != "" {
		req.Header.Set(mcribapi.OperatorHeader, c.opts.Who)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of mcrib at %s: %w", c.opts.Addr, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.answerError(resp, b)
	}
	return b, nil
}

// answerError words an answer outside 2xx: the server's message, and what
// to do about it where the operator can do something (a missing or wrong
// token, plain HTTP sent to a server that speaks HTTPS).
func (c *Client) answerError(resp *http.Response, body []byte) *ServerError {
	var doc mcribapi.ErrorBody
	_ = json.Unmarshal(body, &doc)
	e := &ServerError{Code: resp.StatusCode, Status: resp.Status, Message: strings.TrimSpace(doc.Error)}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && c.opts.Token == "":
		e.Message = "this call changes state and needs the operator token, and none was given"
		e.Hint = tokenHint
	case resp.StatusCode == http.StatusUnauthorized:
		e.Message = "mcrib at " + c.opts.Addr + " refused the operator token from " + c.opts.TokenFrom
		e.Hint = tokenHint + " of this pool"
	case resp.StatusCode == http.StatusBadRequest && bytes.Contains(body, []byte("HTTP request to an HTTPS server")):
		e.Message = "mcrib at " + c.opts.Addr + " serves HTTPS"
		e.Hint = "use https:// in --addr / MCRIB_ADDR"
	}
	return e
}

// transportError words a failed round trip for an operator: what failed,
// at which address and where that address came from, and what to check.
func (c *Client) transportError(ctx context.Context, err error) error {
	base, from := c.opts.Addr, c.opts.AddrFrom
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while asking mcrib at %s", base)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("no answer from mcrib at %s (%s) within %s; %s", base, from, c.opts.Timeout, addrHint)
		}
		err = ue.Err
	}
	var unknownCA x509.UnknownAuthorityError
	var badName x509.HostnameError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach mcrib at %s (%s): connection refused; %s", base, from, addrHint)
	case errors.As(err, &unknownCA):
		return fmt.Errorf("mcrib at %s presents a certificate this host does not trust; set MCRIB_CACERT to that certificate (or its CA)", base)
	case errors.As(err, &badName):
		return fmt.Errorf("mcrib at %s presents a certificate for another name (%v); use the address the certificate names in --addr / MCRIB_ADDR", base, err)
	case errors.As(err, &recordErr) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("mcrib at %s speaks plain HTTP; use http:// in --addr / MCRIB_ADDR", base)
	}
	return fmt.Errorf("cannot reach mcrib at %s (%s): %v; %s", base, from, err, addrHint)
}
