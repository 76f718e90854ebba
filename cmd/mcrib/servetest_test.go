package main

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/mcrib/mcrib/internal/dashtest"
	"github.com/mcrib/mcrib/internal/testenv"
)

// serveInProcess runs mcrib serve with args in this process until the test
// ends, and returns its log; a test that failed logs the log's tail.
func serveInProcess(t *testing.T, args ...string) *testenv.SyncBuffer {
	t.Helper()
	cfg, err := parseServeConfig(args, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testenv.SyncBuffer{}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := runServe(ctx, cfg, io.Discard, logs); err != nil {
			t.Errorf("mcrib serve: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("mcrib log:\n%s", dashtest.Tail(logs.String(), 6000))
		}
	})
	return logs
}
