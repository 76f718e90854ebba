package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
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
)

// apiClient talks to the mcrib operator API for one command: it sends JSON,
// the operator token when there is one, and turns an answer outside 2xx
// into a *serverError carrying the server's message. Build one with
// newClient and close it when the command is done. It is safe for
// concurrent use.
type apiClient struct {
	base  string // base URL without a trailing slash
	token string // bearer token; "" sends none
	http  *http.Client
}

// newClient resolves the address (addrFlag, else env MCRIB_ADDR, else the
// default) and the token (env MCRIB_TOKEN). A bad address is a usage error
// naming where it came from.
func newClient(addrFlag string, getenv func(string) string) (*apiClient, error) {
	addr, from := addrFlag, "--addr"
	if addr == "" {
		if env := getenv("MCRIB_ADDR"); env != "" {
			addr, from = env, "MCRIB_ADDR"
		} else {
			addr = defaultAddr
		}
	}
	base, err := parseAddr(addr)
	if err != nil {
		return nil, usageError("%s %q %v", from, addr, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if err := clientTrust(tr, getenv); err != nil {
		return nil, usageError("%v", err)
	}
	return &apiClient{
		base:  base,
		token: strings.TrimSpace(getenv("MCRIB_TOKEN")),
		http:  &http.Client{Timeout: clientTimeout, Transport: tr},
	}, nil
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
// returns it exits 1 with the server's message.
type serverError struct {
	status  string // "401 Unauthorized"
	message string // the "error" field of the body; "" when the body was not an error document
}

func (e *serverError) Error() string {
	if e.message == "" {
		return "server answered " + e.status
	}
	return e.message + " (" + e.status + ")"
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
// 2xx answer. Other answers come back as *serverError.
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
		var doc struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &doc)
		return nil, &serverError{status: resp.Status, message: strings.TrimSpace(doc.Error)}
	}
	return b, nil
}

// transportError words a failed round trip for an operator.
func (a *apiClient) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while asking mcrib at %s", a.base)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("no answer from mcrib at %s within %s", a.base, clientTimeout)
		}
		err = ue.Err
	}
	return fmt.Errorf("cannot reach mcrib at %s: %v", a.base, err)
}
