package testenv

import (
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// mcribReadyTimeout bounds how long StartMcrib and Start wait for /healthz.
const mcribReadyTimeout = 20 * time.Second

// mcribHostPort is the port of mcrib's API on a host of a test bed when
// McribOptions.Listen is "": mcrib's default, as the host's namespace has
// all its ports free.
const mcribHostPort = 7070

// defaultMcribLogLines is the default McribOptions.LogLines.
const defaultMcribLogLines = 60

// McribOptions describes an `mcrib serve` for StartMcrib: the program (its
// Path, the mcrib binary, is required), and where it listens.
type McribOptions struct {
	// ProgramOptions are mcrib's: Path is the mcrib binary, e.g. one the
	// test built; Name defaults to "mcrib <Addr>"; Args are serve's flags
	// (--consul, --slots, …) after `serve --listen <Listen>`; LogLines
	// defaults to 60.
	ProgramOptions
	// Listen is serve's --listen: "" means 127.0.0.1 on a free port, or
	// the host's address on port 7070 on a host of its own.
	Listen string
	// Addr is where the test binary reaches the API, "host:port"; "" means
	// Listen. Set it when Listen is a wildcard address such as 0.0.0.0.
	Addr string
	// NoWait makes StartMcrib return as soon as the process started, for
	// starting several replicas at once; wait for each with WaitReady.
	NoWait bool
}

// Mcrib is an `mcrib serve` process: its Process handle and the address of
// its API. Start (and Restart) run it again with the same flags, on the
// same address, and wait until /healthz answers. It is killed when the
// test ends. The zero value is not usable; use StartMcrib.
type Mcrib struct {
	*Process
	// Addr is where the test binary reaches the API, "host:port".
	Addr string
}

// StartMcrib starts `<Path> serve --listen <Listen> <Args…>` and waits up
// to 20s until GET /healthz answers 200 (unless NoWait), failing the test,
// with mcrib's last lines of output, when it exits first.
func StartMcrib(t testing.TB, opts McribOptions) *Mcrib {
	t.Helper()
	listen := opts.Listen
	switch {
	case listen != "":
	case opts.Host != nil && opts.Host.NetNS != "":
		listen = net.JoinHostPort(opts.Host.Addr, strconv.Itoa(mcribHostPort))
	default:
		listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	}
	m := &Mcrib{Addr: opts.Addr}
	if m.Addr == "" {
		m.Addr = listen
	}
	name := opts.Name
	if name == "" {
		name = "mcrib " + m.Addr
	}
	m.Process = opts.process(t, name, defaultMcribLogLines)
	m.args = append([]string{"serve", "--listen", listen}, opts.Args...)
	m.ready, m.readyTimeout = m.Healthy, mcribReadyTimeout
	var err error
	if opts.NoWait {
		err = m.start()
	} else {
		err = m.launch()
	}
	if err != nil {
		t.Fatalf("testenv: starting %s: %v\n%s", name, err, m.tail(m.tailLines))
	}
	return m
}

// URL returns the URL of path on the API, e.g. URL("/v1/status").
func (m *Mcrib) URL(path string) string { return "http://" + m.Addr + path }

// healthClient asks /healthz, without a proxy and without keeping
// connections.
var healthClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// Healthy reports whether GET /healthz answers 200: the process serves its
// API (it may not be ready: /readyz says that).
func (m *Mcrib) Healthy() bool {
	resp, err := healthClient.Get(m.URL("/healthz"))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// AddFlags adds serve flags to the command line of the next Start or
// Restart.
func (m *Mcrib) AddFlags(flags ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.args = append(m.args[:len(m.args):len(m.args)], flags...)
}
