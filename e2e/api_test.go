package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/cli"
	"github.com/mcrib/mcrib/mcribapi"
)

// apiTimeout bounds each request of the API clients of tests whose
// replicas may be killed, paused or cut off.
const apiTimeout = 10 * time.Second

// apiClient is the one client of mcrib's HTTP API in these tests, for a
// replica on loopback or on a host of a bed: requests with the operator
// token or without, sent as written (the contract's bodies and answers),
// and the documents read through the CLI's typed client (internal/cli's
// API), as an operator's commands read them. It never fails the test by
// itself, as a replica may be down on purpose: a request that gets no
// answer comes back with code 0 and the error. The mcrib handle
// (harness_test.go) adds the checks that fail the test, for tests whose
// replica must answer.
type apiClient struct {
	base  string // "http://host:port"
	hc    *http.Client
	typed *cli.API
}

// newAPIClient returns a client of the API at addr (host:port) whose
// requests give up after timeout; 0 means never, as blocking reads of the
// slot map need (the typed reads then give up after cli.DefaultTimeout).
func newAPIClient(addr string, timeout time.Duration) *apiClient {
	return apiClientOver(addr, &http.Client{Timeout: timeout})
}

// apiClientOver returns a client of the API at addr (host:port) whose
// requests, the typed reads too, go through hc's transport and timeout.
func apiClientOver(addr string, hc *http.Client) *apiClient {
	typed := cli.NewAPI(cli.APIOptions{Addr: "http://" + addr, AddrFrom: "the test's replica", Transport: hc.Transport, Timeout: hc.Timeout})
	return &apiClient{base: "http://" + addr, hc: hc, typed: typed}
}

// answer is what one request got back.
type answer struct {
	code   int // 0 when no answer came
	body   []byte
	header http.Header
	took   time.Duration // from sending to the end of the body
	err    error         // why no answer came, or why its body was cut short
}

func (a *apiClient) url(path string) string { return a.base + path }

// send sends method path with body (JSON, or none when "") and the bearer
// token tok unless it is "".
func (a *apiClient) send(method, path, body, tok string) answer {
	start := time.Now()
	req, err := http.NewRequest(method, a.url(path), strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return answer{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: b, header: resp.Header, took: time.Since(start), err: err}
}

// do sends a request like send and returns the status code and the body:
// code 0 and the error's text when there is no answer.
func (a *apiClient) do(method, path, body, tok string) (int, []byte) {
	an := a.send(method, path, body, tok)
	if an.code == 0 {
		return 0, []byte(an.err.Error())
	}
	return an.code, an.body
}

// get GETs path; see do.
func (a *apiClient) get(path string) (int, []byte) { return a.do("GET", path, "", "") }

// ready returns the status code of GET /readyz, 0 without an answer.
func (a *apiClient) ready() int {
	code, _ := a.get("/readyz")
	return code
}

// status GETs /v1/status.
func (a *apiClient) status() (mcribapi.Status, error) {
	an, err := a.typed.Status(context.Background())
	return an.Doc, err
}

// bootLimit GETs /v1/ratelimit.
func (a *apiClient) bootLimit() (mcribapi.BootLimit, error) {
	an, err := a.typed.BootLimit(context.Background())
	return an.Doc, err
}

// events GETs /v1/events.
func (a *apiClient) events() ([]mcribapi.Event, error) {
	an, err := a.typed.Events(context.Background(), 0)
	return an.Doc, err
}

// drain GETs /v1/drain; the raw body is returned too.
func (a *apiClient) drain() (mcribapi.DrainDoc, []byte, error) {
	an, err := a.typed.Drains(context.Background())
	if err == nil && an.Doc.Zones == nil {
		err = fmt.Errorf("GET /v1/drain: %s has no \"zones\" object (an empty document is {\"zones\": {}})", an.Body)
	}
	return an.Doc, an.Body, err
}

// resize GETs /v1/resize; the raw body is returned too.
func (a *apiClient) resize() (mcribapi.ResizeDoc, []byte, error) {
	an, err := a.typed.Resize(context.Background())
	return an.Doc, an.Body, err
}

// slotMap GETs /v1/slotmap (query without "?", may be "") and returns the
// document and its X-Mcrib-Index. A 200 whose body breaks the slot map's
// rules is an error wrapping cachenodes.ErrInvalidSlotMap.
func (a *apiClient) slotMap(query string) (*cachenodes.SlotMap, string, error) {
	an := a.send("GET", "/v1/slotmap?"+query, "", "")
	if an.err != nil {
		return nil, "", an.err
	}
	if an.code != http.StatusOK {
		return nil, "", fmt.Errorf("GET /v1/slotmap: %d %s", an.code, an.body)
	}
	m, err := cachenodes.ParseSlotMap(an.body)
	if err != nil {
		return nil, "", fmt.Errorf("decoding /v1/slotmap: %w: %s", err, an.body)
	}
	return m, an.header.Get(mcribapi.IndexHeader), nil
}

// moves returns mcrib_slot_moves_total of kind ("warm" or "cold") from the
// API's /metrics, and false when there is no such sample.
func (a *apiClient) moves(kind string) (float64, bool) {
	code, body := a.get("/metrics")
	if code != http.StatusOK {
		return 0, false
	}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, "mcrib_slot_moves_total{")
		if !ok {
			continue
		}
		labels, val, ok := strings.Cut(rest, "} ")
		if !ok || !strings.Contains(labels, `kind="`+kind+`"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(val, &v); err == nil {
			return v, true
		}
	}
	return 0, false
}

// mustDrain returns the drain document or fails the test.
func mustDrain(t *testing.T, a *apiClient) mcribapi.DrainDoc {
	t.Helper()
	d, _, err := a.drain()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
