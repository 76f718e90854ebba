package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestEventsCommand(t *testing.T) {
	const body = `[{"seq":4,"at":"2026-12-01T05:00:10Z","kind":"hold started","node":"mc-2","reason":"Consul lists it as critical","who":"mcrib"},` +
		`{"seq":5,"at":"2026-12-01T05:01:10Z","kind":"replacement","node":"mc-2","slot":1,"reason":"its hold of 1m passed","who":"mcrib"},` +
		`{"seq":6,"at":"2026-12-01T05:02:00Z","kind":"operator change","reason":"freeze: rollout","who":"10.0.0.9:4444"}]`
	var gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery = r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	defer srv.Close()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"events", "--addr", srv.URL},
			"2026-12-01T05:00:10Z  hold started     mc-2           mcrib          Consul lists it as critical\n" +
				"2026-12-01T05:01:10Z  replacement      mc-2 (slot 1)  mcrib          its hold of 1m passed\n" +
				"2026-12-01T05:02:00Z  operator change  -              10.0.0.9:4444  freeze: rollout\n"},
		{[]string{"events", "--json", "--addr", srv.URL},
			`{"seq":4,"at":"2026-12-01T05:00:10Z","kind":"hold started","node":"mc-2","reason":"Consul lists it as critical","who":"mcrib"}` + "\n" +
				`{"seq":5,"at":"2026-12-01T05:01:10Z","kind":"replacement","node":"mc-2","slot":1,"reason":"its hold of 1m passed","who":"mcrib"}` + "\n" +
				`{"seq":6,"at":"2026-12-01T05:02:00Z","kind":"operator change","reason":"freeze: rollout","who":"10.0.0.9:4444"}` + "\n"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &errOut, nil); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", tc.args, code, errOut.String())
		}
		if out.String() != tc.want {
			t.Errorf("%v printed\n%s\nwant\n%s", tc.args, out.String(), tc.want)
		}
		if gotQuery != "since=0" {
			t.Errorf("%v asked with %q, want since=0", tc.args, gotQuery)
		}
	}
}

// TestEventsFollow answers three polls (two events, one more, then a
// restarted server's first event) and stops the command after the third.
func TestEventsFollow(t *testing.T) {
	old := followEvery
	followEvery = time.Millisecond
	defer func() { followEvery = old }()
	answers := []string{
		`[{"seq":1,"at":"2026-12-01T05:00:00Z","kind":"placement","node":"mc-1","slot":0,"reason":"the first fill of a new pool","who":"mcrib"},` +
			`{"seq":2,"at":"2026-12-01T05:00:01Z","kind":"placement","node":"mc-2","slot":1,"reason":"the first fill of a new pool","who":"mcrib"}]`,
		`[{"seq":3,"at":"2026-12-01T05:01:00Z","kind":"hold started","node":"mc-2","reason":"a Consul check is not passing","who":"mcrib"}]`,
		`[{"seq":1,"at":"2026-12-01T05:02:00Z","kind":"placement","node":"mc-1","slot":0,"reason":"the first fill of a new pool","who":"mcrib"}]`,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n := len(queries)
		queries = append(queries, r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		if n >= len(answers) {
			cancel()
			w.Write([]byte("[]"))
			return
		}
		w.Write([]byte(answers[n]))
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"events", "--follow", "--addr", srv.URL}, &out, &errOut, nil); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"since=0", "since=2", "since=3", "since=1"}; !slices.Equal(queries[:4], want) {
		t.Errorf("queries %q, want %q first", queries, want)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[2], "hold started") || !strings.Contains(lines[3], "05:02:00") {
		t.Errorf("printed\n%s\nwant the two placements, the hold, then the restarted server's placement", out.String())
	}
	if !strings.Contains(errOut.String(), "restarted") {
		t.Errorf("stderr %q, want a note that the server restarted", errOut.String())
	}
}
