package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// headerSeen is one request as headerRecorder saw it.
type headerSeen struct {
	method, path, operator, auth string
}

// headerRecorder answers every request with body and records the
// operator and Authorization headers of each.
type headerRecorder struct {
	body string
	mu   sync.Mutex
	seen []headerSeen
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.seen = append(h.seen, headerSeen{r.Method, r.URL.Path, r.Header.Get(operatorHeader), r.Header.Get("Authorization")})
	h.mu.Unlock()
	fakeWriteJSON(w, http.StatusOK, h.body)
}

func (h *headerRecorder) requests() []headerSeen {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]headerSeen(nil), h.seen...)
}

// TestClientSendsOperator checks that every change carries the operator's
// name (--who, else MCRIB_WHO, else $USER@host) and that reads do not.
func TestClientSendsOperator(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"default: USER@host", []string{"unfreeze"}, map[string]string{"USER": "alice"}, "alice@testhost"},
		{"LOGNAME when USER is unset", []string{"unfreeze"}, map[string]string{"LOGNAME": "bob"}, "bob@testhost"},
		{"the host alone", []string{"unfreeze"}, nil, "testhost"},
		{"MCRIB_WHO", []string{"unfreeze"}, map[string]string{"USER": "alice", "MCRIB_WHO": "oncall-7"}, "oncall-7"},
		{"--who wins", []string{"unfreeze", "--who", "carol@laptop"}, map[string]string{"MCRIB_WHO": "oncall-7"}, "carol@laptop"},
		{"--who before the command", []string{"--who", "carol@laptop", "undrain", "b"}, nil, "carol@laptop"},
		{"ratelimit set", []string{"ratelimit", "set", "5", "--who=dave"}, nil, "dave"},
		{"replace", []string{"replace", "mc-1", "--reason", "r", "--who", "erin"}, nil, "erin"},
		{"drain", []string{"drain", "b", "--reason", "r", "--who", "frank"}, nil, "frank"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &headerRecorder{body: `{}`}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			if code, _, stderr := runCLI(t, tc.env, append(tc.args, "--addr", srv.URL)...); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			reqs := rec.requests()
			if len(reqs) != 1 || reqs[0].operator != tc.want {
				t.Errorf("requests %+v, want one carrying %s: %q", reqs, operatorHeader, tc.want)
			}
		})
	}
	// Reads carry no name; freeze's look at the status first is a read.
	rec := &headerRecorder{body: statusJSON}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	for _, args := range [][]string{{"status"}, {"slots", "--json"}, {"zones"}, {"ratelimit", "--json"}, {"events", "--json"}, {"freeze", "--reason", "r"}} {
		runCLI(t, map[string]string{"USER": "alice"}, append(args, "--addr", srv.URL)...)
	}
	for _, r := range rec.requests() {
		if (r.method == http.MethodGet) != (r.operator == "") {
			t.Errorf("%s %s carried %s %q; want the name on changes only", r.method, r.path, operatorHeader, r.operator)
		}
	}
}

// TestOperatorFromTheAccount: with neither USER nor LOGNAME set (sudo -i,
// cron, a systemd unit), the operator's name is the account the CLI runs
// as, at the host, rather than the host alone.
func TestOperatorFromTheAccount(t *testing.T) {
	c := testCLI(io.Discard, io.Discard, nil)
	c.account = func() string { return "root" }
	if got := c.operator(""); got != "root@testhost" {
		t.Errorf("operator without USER or LOGNAME = %q, want root@testhost", got)
	}
	c.getenv = envOf(map[string]string{"USER": "alice"})
	if got := c.operator(""); got != "alice@testhost" {
		t.Errorf("operator with USER=alice = %q, want alice@testhost", got)
	}
}

// TestClientTokenFile checks that the token comes from --token-file, else
// the file in MCRIB_TOKEN_FILE, else MCRIB_TOKEN, and that a file that
// cannot serve is a usage error naming it.
func TestClientTokenFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		wantAuth string
		wantErr  string // stderr substring of a usage error (exit 2)
	}{
		{name: "--token-file", args: []string{"--token-file", file}, env: map[string]string{"MCRIB_TOKEN": "from-env"}, wantAuth: "Bearer from-file"},
		{name: "MCRIB_TOKEN_FILE", env: map[string]string{"MCRIB_TOKEN_FILE": file, "MCRIB_TOKEN": "from-env"}, wantAuth: "Bearer from-file"},
		{name: "MCRIB_TOKEN", env: map[string]string{"MCRIB_TOKEN": " from-env "}, wantAuth: "Bearer from-env"},
		{name: "missing file", args: []string{"--token-file", filepath.Join(dir, "nope")}, wantErr: `--token-file "` + filepath.Join(dir, "nope") + `" cannot be read: no such file or directory`},
		{name: "empty file", env: map[string]string{"MCRIB_TOKEN_FILE": empty}, wantErr: `MCRIB_TOKEN_FILE "` + empty + `" must hold the token on one line`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &headerRecorder{body: `{}`}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			code, _, stderr := runCLI(t, tc.env, append([]string{"unfreeze", "--addr", srv.URL}, tc.args...)...)
			if tc.wantErr != "" {
				if code != 2 || !strings.Contains(stderr, tc.wantErr) || len(rec.requests()) != 0 {
					t.Errorf("exit %d, stderr %q, %d requests; want 2, %q and no request", code, stderr, len(rec.requests()), tc.wantErr)
				}
				return
			}
			if reqs := rec.requests(); code != 0 || len(reqs) != 1 || reqs[0].auth != tc.wantAuth {
				t.Errorf("exit %d (%s), requests %+v; want the token %q", code, stderr, reqs, tc.wantAuth)
			}
		})
	}
}

// TestClientErrorsSayWhatToDo checks that the errors an operator can fix
// say how: a server that does not answer names the address, where it came
// from, and what to check; plain HTTP sent to a server that speaks HTTPS,
// and the other way round, say which scheme to use.
func TestClientErrorsSayWhatToDo(t *testing.T) {
	dead := deadAddr(t)
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"refused, --addr", []string{"status", "--addr", dead}, nil,
			"mcrib status: cannot reach mcrib at " + dead + " (from --addr): connection refused; check --addr / MCRIB_ADDR, and whether mcrib serve runs there\n"},
		{"refused, MCRIB_ADDR", []string{"zones"}, map[string]string{"MCRIB_ADDR": dead},
			"cannot reach mcrib at " + dead + " (from MCRIB_ADDR): connection refused; check --addr / MCRIB_ADDR"},
		{"HTTP to an HTTPS server", []string{"status", "--addr", strings.Replace(tlsSrv.URL, "https://", "http://", 1)}, nil,
			"serves HTTPS (400 Bad Request); use https:// in --addr / MCRIB_ADDR"},
		{"HTTPS to an HTTP server", []string{"status", "--addr", strings.Replace(plain.URL, "http://", "https://", 1)}, nil,
			"speaks plain HTTP; use http:// in --addr / MCRIB_ADDR"},
		{"certificate not trusted", []string{"status", "--addr", tlsSrv.URL}, nil,
			"presents a certificate this host does not trust; set MCRIB_CACERT to that certificate (or its CA)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.env, tc.args...)
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, tc.want)
			}
		})
	}
}
