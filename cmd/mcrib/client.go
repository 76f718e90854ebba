package main

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
	"os"
	"strings"
	"syscall"
	"time"
)

const (
	// defaultAddr is where the client commands look for mcrib when neither
	// --addr nor env MCRIB_ADDR says otherwise.
	defaultAddr = "http://127.0.0.1:7070"
	// clientTimeout bounds each request of a client command.
	clientTimeout = 10 * time.Second
	// maxAnswerBytes bounds how much of an answer the client reads.
	maxAnswerBytes = 16 << 20
	// tokenHint is what an operator does about a call refused with 401.
	tokenHint = "set MCRIB_TOKEN (or --token-file) to the operator token"
	// addrHint is what an operator does about a server that cannot be
	// reached.
	addrHint = "check --addr / MCRIB_ADDR, and whether mcrib serve runs there"
)

// apiClient talks to the mcrib operator API for one command: it sends JSON,
// the operator token when there is one and the operator's name with every
// change, and turns an answer outside 2xx into a *serverError carrying the
// server's message and what to do about it. Build one with cli.connect and
// close it when the command is done. It is safe for concurrent use.
type apiClient struct {
	base      string // base URL without a trailing slash
	baseFrom  string // where base came from, for errors: "from --addr", "from MCRIB_ADDR" or "the default address"
	token     string // bearer token; "" sends none
	tokenFrom string // where token came from: "--token-file", "MCRIB_TOKEN_FILE" or "MCRIB_TOKEN"
	who       string // the operator's name sent with changes; "" sends none
	http      *http.Client
}

// connect returns a client of the operator API as o says: the address
// (--addr, else env MCRIB_ADDR, else the default), the token (--token-file,
// else the file in env MCRIB_TOKEN_FILE, else env MCRIB_TOKEN) and the
// operator's name (--who, else env MCRIB_WHO, else $USER@host). A bad
// address or an unreadable token file is a usage error naming where it came
// from.
func (c cli) connect(o *clientOptions) (*apiClient, error) {
	addr, from := o.addr, "--addr"
	if addr == "" {
		if env := c.getenv("MCRIB_ADDR"); env != "" {
			addr, from = env, "MCRIB_ADDR"
		} else {
			addr, from = defaultAddr, "the default address"
		}
	}
	base, err := parseAddr(addr)
	if err != nil {
		return nil, usageError("%s %q %v", from, addr, err)
	}
	token, tokenFrom, err := c.clientToken(o.tokenFile)
	if err != nil {
		return nil, usageError("%v", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if err := clientTrust(tr, c.getenv); err != nil {
		return nil, usageError("%v", err)
	}
	if from != "the default address" {
		from = "from " + from
	}
	return &apiClient{
		base: base, baseFrom: from,
		token: token, tokenFrom: tokenFrom,
		who:  c.operator(o.who),
		http: &http.Client{Timeout: clientTimeout, Transport: tr},
	}, nil
}

// clientToken returns the operator token and where it came from: the file
// named by --token-file (flag), else by env MCRIB_TOKEN_FILE, else env
// MCRIB_TOKEN; "" when none is set.
func (c cli) clientToken(flagFile string) (token, from string, err error) {
	path, from := flagFile, "--token-file"
	if path == "" {
		path, from = strings.TrimSpace(c.getenv("MCRIB_TOKEN_FILE")), "MCRIB_TOKEN_FILE"
	}
	if path == "" {
		return strings.TrimSpace(c.getenv("MCRIB_TOKEN")), "MCRIB_TOKEN", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("%s %q cannot be read: %v", from, path, errors.Unwrap(err))
	}
	token = strings.TrimSpace(string(b))
	if token == "" || strings.ContainsAny(token, "\r\n") {
		return "", "", fmt.Errorf("%s %q must hold the token on one line", from, path)
	}
	return token, from, nil
}

// operator returns the operator's name sent with every change: flagWho,
// else env MCRIB_WHO, else $USER@host ($LOGNAME when USER is not set, the
// account this process runs as when neither is; the host alone when none
// is known), as the server will record it.
func (c cli) operator(flagWho string) string {
	if name := operatorName(flagWho); name != "" {
		return name
	}
	if name := operatorName(c.getenv("MCRIB_WHO")); name != "" {
		return name
	}
	user := c.getenv("USER")
	if user == "" {
		user = c.getenv("LOGNAME")
	}
	if user == "" && c.account != nil {
		user = c.account()
	}
	host, err := c.hostname()
	if err != nil {
		host = ""
	}
	switch {
	case user != "" && host != "":
		return operatorName(user + "@" + host)
	case user != "":
		return operatorName(user)
	}
	return operatorName(host)
}

// parseAddr turns a base URL or a bare host:port into a base URL without a
// trailing slash.
func parseAddr(s string) (string, error) {
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

// close drops the client's idle connections.
func (a *apiClient) close() { a.http.CloseIdleConnections() }

// serverError is an answer of the server outside 2xx. A command that
// returns it exits 1 with the server's message and, when there is one, what
// to do about it.
type serverError struct {
	code    int    // 401
	status  string // "401 Unauthorized"
	message string // the "error" field of the body; "" when the body was not an error document
	hint    string // what to do about it; "" when the message says it all
}

func (e *serverError) Error() string {
	s := "server answered " + e.status
	if e.message != "" {
		s = e.message + " (" + e.status + ")"
	}
	if e.hint != "" {
		s += "; " + e.hint
	}
	return s
}

// get sends GET path and returns the body of a 2xx answer.
func (a *apiClient) get(ctx context.Context, path string) ([]byte, error) {
	return a.do(ctx, http.MethodGet, path, nil)
}

// put sends PUT path with in as its JSON body.
func (a *apiClient) put(ctx context.Context, path string, in any) ([]byte, error) {
	return a.do(ctx, http.MethodPut, path, in)
}

// post sends POST path with in as its JSON body (none when in is nil).
func (a *apiClient) post(ctx context.Context, path string, in any) ([]byte, error) {
	return a.do(ctx, http.MethodPost, path, in)
}

// delete sends DELETE path without a body.
func (a *apiClient) delete(ctx context.Context, path string) ([]byte, error) {
	return a.do(ctx, http.MethodDelete, path, nil)
}

// do sends one request with an optional JSON body and returns the body of a
// 2xx answer. Other answers come back as *serverError. A change (any
// method but GET) carries the operator's name in operatorHeader.
func (a *apiClient) do(ctx context.Context, method, path string, in any) ([]byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "mcrib/"+version)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if method != http.MethodGet && a.who != "" {
		req.Header.Set(operatorHeader, a.who)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, a.transportError(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of mcrib at %s: %w", a.base, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, a.answerError(resp, b)
	}
	return b, nil
}

// answerError words an answer outside 2xx: the server's message, and what
// to do about it where the operator can do something (a missing or wrong
// token, plain HTTP sent to a server that speaks HTTPS).
func (a *apiClient) answerError(resp *http.Response, body []byte) *serverError {
	var doc struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &doc)
	e := &serverError{code: resp.StatusCode, status: resp.Status, message: strings.TrimSpace(doc.Error)}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && a.token == "":
		e.message = "this call changes state and needs the operator token, and none was given"
		e.hint = tokenHint
	case resp.StatusCode == http.StatusUnauthorized:
		e.message = "mcrib at " + a.base + " refused the operator token from " + a.tokenFrom
		e.hint = tokenHint + " of this pool"
	case resp.StatusCode == http.StatusBadRequest && bytes.Contains(body, []byte("HTTP request to an HTTPS server")):
		e.message = "mcrib at " + a.base + " serves HTTPS"
		e.hint = "use https:// in --addr / MCRIB_ADDR"
	}
	return e
}

// transportError words a failed round trip for an operator: what failed,
// at which address and where that address came from, and what to check.
func (a *apiClient) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while asking mcrib at %s", a.base)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("no answer from mcrib at %s (%s) within %s; %s", a.base, a.baseFrom, clientTimeout, addrHint)
		}
		err = ue.Err
	}
	var unknownCA x509.UnknownAuthorityError
	var badName x509.HostnameError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach mcrib at %s (%s): connection refused; %s", a.base, a.baseFrom, addrHint)
	case errors.As(err, &unknownCA):
		return fmt.Errorf("mcrib at %s presents a certificate this host does not trust; set MCRIB_CACERT to that certificate (or its CA)", a.base)
	case errors.As(err, &badName):
		return fmt.Errorf("mcrib at %s presents a certificate for another name (%v); use the address the certificate names in --addr / MCRIB_ADDR", a.base, err)
	case errors.As(err, &recordErr) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("mcrib at %s speaks plain HTTP; use http:// in --addr / MCRIB_ADDR", a.base)
	}
	return fmt.Errorf("cannot reach mcrib at %s (%s): %v; %s", a.base, a.baseFrom, err, addrHint)
}
