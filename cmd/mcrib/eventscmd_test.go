package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
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
