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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
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

// APIOptions configures NewAPI. The command line fills it from the client
// flags and the environment.
type APIOptions struct {
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
}

// API is a typed client of the operator API (docs/api.md): each call
// sends one request and returns the mcribapi document of its 2xx answer,
// with the body as it came. An answer outside 2xx is a *ServerError
// carrying the server's message and what to do about it; a failed round
// trip an error that says what to check; a 2xx body that is not the
// document a *DocumentError (the Answer still holds the body). Build one
// with NewAPI and Close it when done. It is safe for concurrent use.
type API struct {
	opts APIOptions
	http *http.Client
}

// NewAPI returns the client of the API opts describes.
func NewAPI(opts APIOptions) *API {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &API{opts: opts, http: &http.Client{Timeout: opts.Timeout, Transport: opts.Transport}}
}

// Close drops the client's idle connections.
func (c *API) Close() { c.http.CloseIdleConnections() }

// Answer is a 2xx answer of the API: its document, and its body as it
// came (what --json prints).
type Answer[T any] struct {
	Doc  T
	Body []byte
	// sent is the set of fields the body carried (sentFields), for the
	// renderers that print a field not sent as unknown.
	sent sentFields
}

// DocumentError is a 2xx answer whose body does not read as the document
// the call expects.
type DocumentError struct {
	What string // "the status document"
	Err  error
}

func (e *DocumentError) Error() string { return "reading " + e.What + ": " + e.Err.Error() }

func (e *DocumentError) Unwrap() error { return e.Err }

// call sends method path with in as its JSON body (none when in is nil)
// and decodes a 2xx answer as a T, the document named what.
func call[T any](ctx context.Context, c *API, method, path string, in any, what string) (Answer[T], error) {
	b, err := c.do(ctx, method, path, in)
	if err != nil {
		return Answer[T]{}, err
	}
	a := Answer[T]{Body: b}
	if a.sent, err = decodeDocument(b, &a.Doc); err != nil {
		return a, &DocumentError{What: what, Err: err}
	}
	return a, nil
}

// Status returns GET /v1/status.
func (c *API) Status(ctx context.Context) (Answer[mcribapi.Status], error) {
	return call[mcribapi.Status](ctx, c, http.MethodGet, "/v1/status", nil, "the status document")
}

// SlotMap returns GET /v1/slotmap, checked as cachenodes.ParseSlotMap
// checks a map.
func (c *API) SlotMap(ctx context.Context) (Answer[*cachenodes.SlotMap], error) {
	b, err := c.do(ctx, http.MethodGet, "/v1/slotmap", nil)
	if err != nil {
		return Answer[*cachenodes.SlotMap]{}, err
	}
	a := Answer[*cachenodes.SlotMap]{Body: b}
	if a.Doc, err = cachenodes.ParseSlotMap(b); err != nil {
		return a, &DocumentError{What: "the slot map document", Err: err}
	}
	return a, nil
}

// Freeze sends PUT /v1/freeze.
func (c *API) Freeze(ctx context.Context, req mcribapi.FreezeRequest) (Answer[mcribapi.FreezeDoc], error) {
	return call[mcribapi.FreezeDoc](ctx, c, http.MethodPut, "/v1/freeze", req, "the freeze document")
}

// Unfreeze sends DELETE /v1/freeze.
func (c *API) Unfreeze(ctx context.Context) (Answer[mcribapi.FreezeDoc], error) {
	return call[mcribapi.FreezeDoc](ctx, c, http.MethodDelete, "/v1/freeze", nil, "the freeze document")
}

// BootLimit returns GET /v1/ratelimit.
func (c *API) BootLimit(ctx context.Context) (Answer[mcribapi.BootLimit], error) {
	return call[mcribapi.BootLimit](ctx, c, http.MethodGet, "/v1/ratelimit", nil, "the boot-limit document")
}

// SetBootLimit sends PUT /v1/ratelimit.
func (c *API) SetBootLimit(ctx context.Context, req mcribapi.BootLimitRequest) (Answer[mcribapi.BootLimit], error) {
	return call[mcribapi.BootLimit](ctx, c, http.MethodPut, "/v1/ratelimit", req, "the boot-limit document")
}

// Drains returns GET /v1/drain.
func (c *API) Drains(ctx context.Context) (Answer[mcribapi.DrainDoc], error) {
	return call[mcribapi.DrainDoc](ctx, c, http.MethodGet, "/v1/drain", nil, "the drain document")
}

// Drain sends PUT /v1/drain/ZONE.
func (c *API) Drain(ctx context.Context, zone string, req mcribapi.DrainRequest) (Answer[mcribapi.DrainDoc], error) {
	return call[mcribapi.DrainDoc](ctx, c, http.MethodPut, "/v1/drain/"+url.PathEscape(zone), req, "the drain document")
}

// Undrain sends DELETE /v1/drain/ZONE.
func (c *API) Undrain(ctx context.Context, zone string) (Answer[mcribapi.DrainDoc], error) {
	return call[mcribapi.DrainDoc](ctx, c, http.MethodDelete, "/v1/drain/"+url.PathEscape(zone), nil, "the drain document")
}

// Replace sends POST /v1/nodes/NODE/replace.
func (c *API) Replace(ctx context.Context, node string, req mcribapi.ReplaceRequest) (Answer[mcribapi.ReplaceAnswer], error) {
	return call[mcribapi.ReplaceAnswer](ctx, c, http.MethodPost, "/v1/nodes/"+url.PathEscape(node)+"/replace", req, "the answer of the replace")
}

// Events returns GET /v1/events: the events after since (0: all kept).
func (c *API) Events(ctx context.Context, since uint64) (Answer[[]mcribapi.Event], error) {
	return call[[]mcribapi.Event](ctx, c, http.MethodGet, "/v1/events?since="+strconv.FormatUint(since, 10), nil, "the events")
}

// Resize returns GET /v1/resize.
func (c *API) Resize(ctx context.Context) (Answer[mcribapi.ResizeDoc], error) {
	return call[mcribapi.ResizeDoc](ctx, c, http.MethodGet, "/v1/resize", nil, "the resize document")
}

// StartResize sends PUT /v1/resize: a start, or with the pool's own count
// the resume of a stopped resize.
func (c *API) StartResize(ctx context.Context, req mcribapi.ResizeRequest) (Answer[mcribapi.ResizeDoc], error) {
	return call[mcribapi.ResizeDoc](ctx, c, http.MethodPut, "/v1/resize", req, "the resize document")
}

// StopResize sends DELETE /v1/resize.
func (c *API) StopResize(ctx context.Context) (Answer[mcribapi.ResizeDoc], error) {
	return call[mcribapi.ResizeDoc](ctx, c, http.MethodDelete, "/v1/resize", nil, "the resize document")
}

// Roll returns GET /v1/roll.
func (c *API) Roll(ctx context.Context) (Answer[mcribapi.RollDoc], error) {
	return call[mcribapi.RollDoc](ctx, c, http.MethodGet, "/v1/roll", nil, "the roll document")
}

// StartRoll sends PUT /v1/roll.
func (c *API) StartRoll(ctx context.Context, req mcribapi.RollRequest) (Answer[mcribapi.RollDoc], error) {
	return call[mcribapi.RollDoc](ctx, c, http.MethodPut, "/v1/roll", req, "the roll document")
}

// StopRoll sends DELETE /v1/roll.
func (c *API) StopRoll(ctx context.Context) (Answer[mcribapi.RollDoc], error) {
	return call[mcribapi.RollDoc](ctx, c, http.MethodDelete, "/v1/roll", nil, "the roll document")
}

// WhatIf sends POST /v1/whatif: the action ("drain", naming zone, or
// "resize") with req, the action's own request (a DrainRequest or a
// ResizeRequest). The simulation takes seconds: the call may take up to
// WhatIfTimeout, whatever Options.Timeout says.
func (c *API) WhatIf(ctx context.Context, action, zone string, req any) (Answer[mcribapi.Prediction], error) {
	body, err := whatIfBody(action, zone, req)
	if err != nil {
		return Answer[mcribapi.Prediction]{}, err
	}
	long := *c
	long.http = &http.Client{Timeout: max(c.opts.Timeout, WhatIfTimeout), Transport: c.opts.Transport}
	return call[mcribapi.Prediction](ctx, &long, http.MethodPost, "/v1/whatif", body, "the what-if's prediction")
}

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

// do sends one request with an optional JSON body and returns the body of a
// 2xx answer. Other answers come back as *ServerError. A change (any
// method but GET) carries the operator's name in mcribapi.OperatorHeader.
func (c *API) do(ctx context.Context, method, path string, in any) ([]byte, error) {
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
func (c *API) answerError(resp *http.Response, body []byte) *ServerError {
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
func (c *API) transportError(ctx context.Context, err error) error {
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
