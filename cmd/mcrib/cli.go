package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
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

// commandUsage returns the usage line of a client command.
func commandUsage(cmd string) (string, bool) {
	const addr = "[--addr URL]"
	switch cmd {
	case "status":
		return "usage: mcrib status [--json] " + addr, true
	case "slots":
		return "usage: mcrib slots [--json] " + addr, true
	case "freeze":
		return "usage: mcrib freeze --reason TEXT " + addr, true
	case "unfreeze":
		return "usage: mcrib unfreeze " + addr, true
	case "ratelimit":
		return "usage: mcrib ratelimit [--json] " + addr + "\n" +
			"       mcrib ratelimit set N [--burst B] [--json] " + addr + "\n" +
			"       mcrib ratelimit auto [--burst B] [--json] " + addr, true
	case "version":
		return "usage: mcrib version", true
	}
	return "", false
}

// cli runs the client commands. Its zero value is not usable: every field
// must be set. It holds no state between commands.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// usageError reports a usage problem of cmd and returns exit code 2.
func (c cli) usageError(cmd, format string, a ...any) int {
	fmt.Fprintf(c.stderr, "mcrib %s: %s\n", cmd, fmt.Sprintf(format, a...))
	if u, ok := commandUsage(cmd); ok {
		fmt.Fprintln(c.stderr, u)
	}
	return 2
}

// fail reports a failed request of cmd and returns exit code 1.
func (c cli) fail(cmd string, err error) int {
	fmt.Fprintf(c.stderr, "mcrib %s: %v\n", cmd, err)
	return 1
}

// flagSet returns a flag set for cmd with the --addr flag every client
// command takes.
func (c cli) flagSet(cmd string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("mcrib "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	addr := fs.String("addr", "", "base URL or host:port of the mcrib operator API")
	return fs, addr
}

// parseFlags parses args, flags and positional arguments in any order. It
// returns ok false with the exit code when the command must stop: 0 after
// printing the usage for -h, 2 after a usage error.
func (c cli) parseFlags(cmd string, fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		u, _ := commandUsage(cmd)
		fmt.Fprintln(c.stdout, u)
		return nil, 0, false
	}
	if err != nil {
		return nil, c.usageError(cmd, "%s", dashDash(err.Error())), false
	}
	return pos, 0, true
}

// parseInterspersed parses fs from args where flags and positional arguments
// may be mixed ("set 5 --burst 3", "--addr x set 5"). An argument that reads
// as a negative number is positional, not a flag; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' || isNumber(a) {
			pos = append(pos, a)
			continue
		}
		chunk := []string{a}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) && i+1 < len(args) {
			i++
			chunk = append(chunk, args[i])
		}
		if err := fs.Parse(chunk); err != nil {
			return nil, err
		}
	}
	return pos, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
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

// apiClient talks to the mcrib operator API. It is used by one command and
// then dropped.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

// newClient resolves the address (--addr, else env MCRIB_ADDR, else the
// default) and the token (env MCRIB_TOKEN). A bad address is a usage error.
func (c cli) newClient(cmd, addrFlag string) (*apiClient, int, bool) {
	addr, from := addrFlag, "--addr"
	if addr == "" {
		if env := c.getenv("MCRIB_ADDR"); env != "" {
			addr, from = env, "MCRIB_ADDR"
		} else {
			addr = defaultAddr
		}
	}
	base, err := parseAddr(addr)
	if err != nil {
		return nil, c.usageError(cmd, "%s %q %v", from, addr, err), false
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &apiClient{
		base:  base,
		token: strings.TrimSpace(c.getenv("MCRIB_TOKEN")),
		http:  &http.Client{Timeout: clientTimeout, Transport: tr},
	}, 0, true
}

// close drops the client's idle connections.
func (a *apiClient) close() { a.http.CloseIdleConnections() }

// serverError is an answer of the server outside 2xx.
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

// printRaw writes a JSON answer as it came, ending in a newline.
func (c cli) printRaw(b []byte) int {
	c.stdout.Write(b)
	if len(b) == 0 || b[len(b)-1] != '\n' {
		fmt.Fprintln(c.stdout)
	}
	return 0
}

// get runs a read-only command: GET path, then either the raw body or the
// readable form made by show.
func (c cli) get(ctx context.Context, cmd, path string, args []string, show func(io.Writer, []byte) error) int {
	fs, addr := c.flagSet(cmd)
	asJSON := fs.Bool("json", false, "print the raw JSON document")
	pos, code, ok := c.parseFlags(cmd, fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.usageError(cmd, "unexpected argument %q", pos[0])
	}
	cl, code, ok := c.newClient(cmd, *addr)
	if !ok {
		return code
	}
	defer cl.close()
	b, err := cl.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return c.fail(cmd, err)
	}
	if *asJSON {
		return c.printRaw(b)
	}
	if err := show(c.stdout, b); err != nil {
		return c.fail(cmd, err)
	}
	return 0
}

// status prints GET /v1/status.
func (c cli) status(ctx context.Context, args []string) int {
	return c.get(ctx, "status", "/v1/status", args, func(w io.Writer, b []byte) error {
		var doc statusDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("reading the status document: %w", err)
		}
		printStatus(w, doc)
		return nil
	})
}

// slots prints GET /v1/slotmap.
func (c cli) slots(ctx context.Context, args []string) int {
	return c.get(ctx, "slots", "/v1/slotmap", args, func(w io.Writer, b []byte) error {
		var doc slotMapDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("reading the slot map document: %w", err)
		}
		printSlotMap(w, doc)
		return nil
	})
}

// freeze sends PUT /v1/freeze.
func (c cli) freeze(ctx context.Context, args []string) int {
	fs, addr := c.flagSet("freeze")
	reason := fs.String("reason", "", "why membership is frozen (required)")
	pos, code, ok := c.parseFlags("freeze", fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.usageError("freeze", "unexpected argument %q", pos[0])
	}
	if strings.TrimSpace(*reason) == "" {
		return c.usageError("freeze", "--reason is required and must not be empty")
	}
	cl, code, ok := c.newClient("freeze", *addr)
	if !ok {
		return code
	}
	defer cl.close()
	b, err := cl.do(ctx, http.MethodPut, "/v1/freeze", map[string]string{"reason": *reason})
	if err != nil {
		return c.fail("freeze", err)
	}
	var doc freezeDoc
	if json.Unmarshal(b, &doc) != nil || doc.Reason == "" {
		doc.Reason = *reason
	}
	fmt.Fprintf(c.stdout, "frozen: %s\n", doc.Reason)
	return 0
}

// unfreeze sends DELETE /v1/freeze.
func (c cli) unfreeze(ctx context.Context, args []string) int {
	fs, addr := c.flagSet("unfreeze")
	pos, code, ok := c.parseFlags("unfreeze", fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return c.usageError("unfreeze", "unexpected argument %q", pos[0])
	}
	cl, code, ok := c.newClient("unfreeze", *addr)
	if !ok {
		return code
	}
	defer cl.close()
	if _, err := cl.do(ctx, http.MethodDelete, "/v1/freeze", nil); err != nil {
		return c.fail("unfreeze", err)
	}
	fmt.Fprintln(c.stdout, "unfrozen")
	return 0
}

// rateLimitRequest is the body of PUT /v1/ratelimit.
type rateLimitRequest struct {
	Mode  string   `json:"mode"`
	Limit *float64 `json:"limit,omitempty"`
	Burst *int     `json:"burst,omitempty"`
}

// ratelimit prints GET /v1/ratelimit, or changes it with `set N` or `auto`.
func (c cli) ratelimit(ctx context.Context, args []string) int {
	const cmd = "ratelimit"
	fs, addr := c.flagSet(cmd)
	asJSON := fs.Bool("json", false, "print the raw boot-limit document")
	burstText := fs.String("burst", "", "bucket size, whole boots >= 1 (with set or auto)")
	pos, code, ok := c.parseFlags(cmd, fs, args)
	if !ok {
		return code
	}
	burstGiven := false
	fs.Visit(func(f *flag.Flag) { burstGiven = burstGiven || f.Name == "burst" })

	method, path := http.MethodGet, "/v1/ratelimit"
	var req *rateLimitRequest
	switch {
	case len(pos) == 0:
		if burstGiven {
			return c.usageError(cmd, "--burst goes with set or auto")
		}
	case pos[0] == "set":
		if len(pos) < 2 {
			return c.usageError(cmd, "set needs a limit in boots/s")
		}
		if len(pos) > 2 {
			return c.usageError(cmd, "unexpected argument %q", pos[2])
		}
		n, err := strconv.ParseFloat(pos[1], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return c.usageError(cmd, "set: limit %q is not a number", pos[1])
		}
		if n < 0 {
			return c.usageError(cmd, "set: limit must not be negative, got %s", pos[1])
		}
		req = &rateLimitRequest{Mode: "manual", Limit: &n}
	case pos[0] == "auto":
		if len(pos) > 1 {
			return c.usageError(cmd, "unexpected argument %q", pos[1])
		}
		req = &rateLimitRequest{Mode: "auto"}
	default:
		return c.usageError(cmd, "unknown subcommand %q (want set or auto)", pos[0])
	}
	if req != nil {
		method = http.MethodPut
		if burstGiven {
			b, err := strconv.Atoi(strings.TrimSpace(*burstText))
			if err != nil || b < 1 {
				return c.usageError(cmd, "--burst must be a whole number of at least 1, got %q", *burstText)
			}
			req.Burst = &b
		}
	}

	cl, code, ok := c.newClient(cmd, *addr)
	if !ok {
		return code
	}
	defer cl.close()
	var in any
	if req != nil {
		in = req
	}
	b, err := cl.do(ctx, method, path, in)
	if err != nil {
		return c.fail(cmd, err)
	}
	if *asJSON {
		return c.printRaw(b)
	}
	var doc bootLimitDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return c.fail(cmd, fmt.Errorf("reading the boot-limit document: %w", err))
	}
	printBootLimit(c.stdout, doc)
	return 0
}

// version prints the version.
func (c cli) version(args []string) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			u, _ := commandUsage("version")
			fmt.Fprintln(c.stdout, u)
			return 0
		}
		return c.usageError("version", "unexpected argument %q", args[0])
	}
	fmt.Fprintf(c.stdout, "mcrib %s\n", version)
	return 0
}

// freezeDoc is the freeze document of CONTRACT.md section 3.
type freezeDoc struct {
	Frozen bool   `json:"frozen"`
	Reason string `json:"reason"`
	At     string `json:"at"`
	By     string `json:"by"`
}

// bootLimitDoc is the boot-limit document of CONTRACT.md section 5. Pointers
// and json.Number tell a missing field from a zero one.
type bootLimitDoc struct {
	Mode      string      `json:"mode"`
	Limit     *float64    `json:"limit"`
	Burst     json.Number `json:"burst"`
	HitRate   *float64    `json:"hit_rate"`
	Floor     *float64    `json:"floor"`
	Ceiling   *float64    `json:"ceiling"`
	UpdatedAt string      `json:"updated_at"`
	Reason    string      `json:"reason"`
}

// statusDoc is the status document of CONTRACT.md section 3, plus the
// discovery-fault fields. Unknown fields are ignored; missing ones print as
// unknown.
type statusDoc struct {
	Pool                 string        `json:"pool"`
	Leader               bool          `json:"leader"`
	LeaderID             string        `json:"leader_id"`
	Frozen               bool          `json:"frozen"`
	Freeze               *freezeDoc    `json:"freeze"`
	AutoFrozen           bool          `json:"auto_frozen"`
	AutoFreezeReason     string        `json:"auto_freeze_reason"`
	DiscoveryFault       bool          `json:"discovery_fault"`
	DiscoveryFaultReason string        `json:"discovery_fault_reason"`
	Generation           json.Number   `json:"generation"`
	LastReconcileAt      string        `json:"last_reconcile_at"`
	ConsulReachable      *bool         `json:"consul_reachable"`
	HitRate              *float64      `json:"hit_rate"`
	BootLimit            *bootLimitDoc `json:"boot_limit"`
	Nodes                []nodeDoc     `json:"nodes"`
}

// nodeDoc is one entry of the status document's nodes.
type nodeDoc struct {
	ID          string      `json:"id"`
	Addr        string      `json:"addr"`
	AZ          string      `json:"az"`
	Slot        *int        `json:"slot"`
	Consul      string      `json:"consul"`
	Reachable   *bool       `json:"reachable"`
	State       string      `json:"state"`
	AbsentSince string      `json:"absent_since"`
	Flaps       json.Number `json:"flaps"`
}

// slotMapDoc is the slot map document of CONTRACT.md section 4.
type slotMapDoc struct {
	Pool       string      `json:"pool"`
	NumSlots   json.Number `json:"num_slots"`
	Generation json.Number `json:"generation"`
	UpdatedAt  string      `json:"updated_at"`
	Slots      []struct {
		Slot   *int   `json:"slot"`
		NodeID string `json:"node_id"`
		Addr   string `json:"addr"`
		AZ     string `json:"az"`
	} `json:"slots"`
	Spares []struct {
		NodeID string `json:"node_id"`
		Addr   string `json:"addr"`
		AZ     string `json:"az"`
	} `json:"spares"`
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orUnknown(n json.Number) string {
	if n == "" {
		return "unknown"
	}
	return n.String()
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "unknown"
	case *b:
		return "yes"
	}
	return "no"
}

func formatHitRate(h *float64) string {
	if h == nil {
		return "unknown"
	}
	return strconv.FormatFloat(*h, 'f', 2, 64)
}

func formatNumber(f *float64) string {
	if f == nil {
		return "unknown"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// formatTime prints an RFC 3339 time as given, and "never" for no time.
func formatTime(s string) string {
	if s == "" || strings.HasPrefix(s, "0001-01-01") {
		return "never"
	}
	return s
}

// printStatus writes the readable form of the status document.
func printStatus(w io.Writer, s statusDoc) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("pool", orDash(s.Pool))
	switch {
	case s.Leader:
		line("leader", "yes ("+orDash(s.LeaderID)+")")
	case s.LeaderID != "":
		line("leader", "no (leader is "+s.LeaderID+")")
	default:
		line("leader", "no (no leader known)")
	}
	switch {
	case !s.Frozen:
		line("frozen", "no")
	case s.Freeze == nil:
		line("frozen", "yes")
	default:
		line("frozen", fmt.Sprintf("yes: %q by %s at %s", s.Freeze.Reason, orDash(s.Freeze.By), orDash(s.Freeze.At)))
	}
	if s.AutoFrozen {
		line("auto-frozen", "yes: "+orDash(s.AutoFreezeReason))
	} else {
		line("auto-frozen", "no")
	}
	if s.DiscoveryFault {
		line("discovery fault", "yes: "+orDash(s.DiscoveryFaultReason))
	}
	line("generation", orUnknown(s.Generation))
	line("last reconcile", formatTime(s.LastReconcileAt))
	line("consul reachable", yesNo(s.ConsulReachable))
	line("hit rate", formatHitRate(s.HitRate))
	if b := s.BootLimit; b != nil {
		line("boot limit", fmt.Sprintf("%s, %s boots/s, burst %s", orDash(b.Mode), formatNumber(b.Limit), orUnknown(b.Burst)))
	} else {
		line("boot limit", "unknown")
	}
	tw.Flush()

	fmt.Fprintln(w)
	if len(s.Nodes) == 0 {
		fmt.Fprintln(w, "no nodes")
		return
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDR\tAZ\tSLOT\tCONSUL\tREACHABLE\tSTATE\tFLAPS")
	for _, n := range s.Nodes {
		slot := "-"
		if n.Slot != nil && *n.Slot >= 0 {
			slot = strconv.Itoa(*n.Slot)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			orDash(n.ID), orDash(n.Addr), orDash(n.AZ), slot, orDash(n.Consul),
			yesNo(n.Reachable), orDash(n.State), orDash(n.Flaps.String()))
	}
	tw.Flush()
}

// printSlotMap writes the readable form of the slot map document.
func printSlotMap(w io.Writer, m slotMapDoc) {
	fmt.Fprintf(w, "pool %s  generation %s  slots %s  updated %s\n\n",
		orDash(m.Pool), orUnknown(m.Generation), orUnknown(m.NumSlots), formatTime(m.UpdatedAt))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tNODE\tADDR\tAZ")
	for i, s := range m.Slots {
		slot := i
		if s.Slot != nil {
			slot = *s.Slot
		}
		if s.NodeID == "" {
			fmt.Fprintf(tw, "%d\t(vacant)\t-\t-\n", slot)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", slot, s.NodeID, orDash(s.Addr), orDash(s.AZ))
	}
	tw.Flush()

	fmt.Fprintln(w)
	if len(m.Spares) == 0 {
		fmt.Fprintln(w, "SPARES: none")
		return
	}
	fmt.Fprintln(w, "SPARES:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range m.Spares {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", orDash(s.NodeID), orDash(s.Addr), orDash(s.AZ))
	}
	tw.Flush()
}

// printBootLimit writes the readable form of the boot-limit document.
func printBootLimit(w io.Writer, b bootLimitDoc) {
	fmt.Fprintf(w, "mode %s, limit %s boots/s, burst %s, hit rate %s\n",
		orDash(b.Mode), formatNumber(b.Limit), orUnknown(b.Burst), formatHitRate(b.HitRate))
	reason := b.Reason
	if reason == "" {
		reason = "(none)"
	}
	fmt.Fprintf(w, "reason: %s\n", reason)
}
