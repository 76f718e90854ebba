package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

func TestPrintRoll(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	rel := at.Add(4 * time.Minute)
	slot0, slot3 := 0, 3
	e := &mcribapi.RollEntry{Reason: "memcached 1.6.38", By: "ops", At: at, RestartTimeout: "10m", State: mcribapi.RollRolling,
		Nodes: []mcribapi.RollNode{
			{NodeID: "mc-a-1", AZ: "a", State: mcribapi.RollRestarted, Slot: &slot0, To: "mc-c-4"},
			{NodeID: "mc-a-2", AZ: "a", State: mcribapi.RollReleased, Slot: &slot3, To: "mc-b-4", ReleasedAt: &rel},
			{NodeID: "mc-a-3", AZ: "a", State: mcribapi.RollWaiting},
		}}
	var b strings.Builder
	printRoll(&b, e, rel.Add(10*time.Second))
	for _, want := range []string{
		"roll: rolling: 1 of 3 nodes restarted\n",
		"  reason: memcached 1.6.38 (by ops, ",
		"a restart awaited up to 10m each",
		"  restarted  mc-a-1 (zone a), slot 0 to mc-c-4\n",
		"  released   mc-a-2 (zone a), slot 3 to mc-b-4, released 10 s ago",
		"restart it now",
		"  waiting    mc-a-3 (zone a)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printRoll lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	printRoll(&b, nil, at)
	if b.String() != "no roll under way\n" {
		t.Errorf("no entry: %q", b.String())
	}
	facts := rollFacts(mcribapi.Status{Roll: e})
	if len(facts) != 2 || facts[0][1] != "rolling: 1 of 3 nodes restarted" || !strings.Contains(facts[1][1], "mc-a-2") {
		t.Errorf("status facts %q", facts)
	}
}

// fakeRollServer answers /v1/roll as a leader would for a roll of the
// nodes given: each released node restarts (the next begins) once the
// script the test runs has touched its file.
type fakeRollServer struct {
	mu      sync.Mutex
	dir     string
	entry   *mcribapi.RollEntry
	stopped int
}

func (f *fakeRollServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodPut:
		var req mcribapi.RollRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.entry = &mcribapi.RollEntry{Reason: req.Reason, RestartTimeout: "10s", State: mcribapi.RollRolling}
		for _, id := range req.Nodes {
			f.entry.Nodes = append(f.entry.Nodes, mcribapi.RollNode{NodeID: id, Addr: id + ":11211", AZ: "a", State: mcribapi.RollWaiting})
		}
	case http.MethodDelete:
		f.stopped++
		f.entry.State = mcribapi.RollStopped
	}
	f.advanceLocked()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(mcribapi.RollDoc{Roll: f.entry})
}

// advanceLocked moves the roll on: a released node whose file exists is
// restarted, and the next waiting node is released.
func (f *fakeRollServer) advanceLocked() {
	e := f.entry
	if e == nil || !e.State.Runs() {
		return
	}
	for i := range e.Nodes {
		n := &e.Nodes[i]
		switch n.State {
		case mcribapi.RollReleased:
			if _, err := os.Stat(filepath.Join(f.dir, n.NodeID)); err != nil {
				return
			}
			n.State = mcribapi.RollRestarted
		case mcribapi.RollWaiting:
			n.State = mcribapi.RollReleased
			return
		}
	}
	e.State = mcribapi.RollDone
}

func rollExec(t *testing.T, cmd string, nodes ...string) (*fakeRollServer, string, error) {
	t.Helper()
	f := &fakeRollServer{dir: t.TempDir()}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var out, errOut strings.Builder
	c := New(Options{APIOptions: APIOptions{Addr: srv.URL}, Stdout: &out, Stderr: &errOut, FollowEvery: time.Millisecond})
	defer c.Close()
	t.Setenv("ROLL_DIR", f.dir)
	err := c.RollExec(context.Background(), mcribapi.RollRequest{Reason: "upgrade", Nodes: nodes}, cmd)
	return f, out.String() + errOut.String(), err
}

// TestRollExec: the command runs once per released node with the node's
// ID, address and zone in its environment, its output shown; the roll
// done, it returns nil.
func TestRollExec(t *testing.T) {
	f, out, err := rollExec(t, `echo "restarting $MCRIB_NODE_ID at $MCRIB_NODE_ADDR in $MCRIB_NODE_AZ"; touch "$ROLL_DIR/$MCRIB_NODE_ID"`, "mc-1", "mc-2")
	if err != nil {
		t.Fatalf("RollExec: %v\n%s", err, out)
	}
	for _, want := range []string{"restarting mc-1 at mc-1:11211 in a", "restarting mc-2 at mc-2:11211 in a", "the command for mc-2 exited 0", "roll done: done: 2 of 2 nodes restarted"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "running for mc-1") != 1 || f.stopped != 0 {
		t.Errorf("the command ran %d times for mc-1; the roll was stopped %d times", strings.Count(out, "running for mc-1"), f.stopped)
	}
}

// TestRollExecStopsTheRollWhenTheCommandFails: a command that exits
// non-zero stops the roll first, and RollExec returns ErrRollNotDone.
func TestRollExecStopsTheRollWhenTheCommandFails(t *testing.T) {
	f, out, err := rollExec(t, `echo "no route to $MCRIB_NODE_ID" >&2; exit 3`, "mc-1", "mc-2")
	if !errors.Is(err, ErrRollNotDone) || !strings.Contains(err.Error(), "exited with exit status 3") {
		t.Fatalf("RollExec: %v", err)
	}
	if f.stopped != 1 || !strings.Contains(out, "no route to mc-1") || strings.Contains(out, "running for mc-2") {
		t.Errorf("stopped %d times; output:\n%s", f.stopped, out)
	}
}

// TestRollExecStopsTheRollOnASignal: the context ending before the roll
// is done (a signal) stops the roll.
func TestRollExecStopsTheRollOnASignal(t *testing.T) {
	f := &fakeRollServer{dir: t.TempDir()}
	srv := httptest.NewServer(f)
	defer srv.Close()
	out := &lockedBuffer{}
	c := New(Options{APIOptions: APIOptions{Addr: srv.URL}, Stdout: out, Stderr: out, FollowEvery: time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.RollExec(ctx, mcribapi.RollRequest{Reason: "upgrade", Nodes: []string{"mc-1"}}, `exec sleep 30`)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "running for mc-1") {
		if time.Now().After(deadline) {
			t.Fatalf("the command never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	err := <-done
	f.mu.Lock()
	defer f.mu.Unlock()
	if !errors.Is(err, ErrRollNotDone) || f.stopped != 1 {
		t.Fatalf("RollExec after the signal: %v, stopped %d times", err, f.stopped)
	}
}

// lockedBuffer is a strings.Builder safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
