package mcribapi

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseRollRequest(t *testing.T) {
	r, err := ParseRollRequest([]byte(`{"reason":" memcached 1.6.38 ","nodes":["mc-3","mc-7"],"restart_timeout":"90s"}`))
	if err != nil || r.Reason != "memcached 1.6.38" || len(r.Nodes) != 2 || r.RestartTimeout != 90*time.Second || r.TimeoutText() != "90s" || r.What() != "nodes [mc-3 mc-7]" {
		t.Fatalf("ParseRollRequest = %+v, %v", r, err)
	}
	r, err = ParseRollRequest([]byte(`{"reason":"r","all":true}`))
	if err != nil || !r.All || r.RestartTimeout != DefaultRestartTimeout || r.TimeoutText() != "10m0s" || r.What() != "every node" {
		t.Fatalf("the defaults: %+v, %v", r, err)
	}
	if _, err := ParseRollRequest([]byte(`{"reason":"r","zone":"a","nodes":["x"]}`)); StatusCode(err) != 400 || !strings.Contains(err.Error(), "exactly one") {
		t.Errorf("zone and nodes: %v", err)
	}
}

func TestParseStoredRoll(t *testing.T) {
	doc, err := ParseStoredRoll([]byte(`{"roll":{"reason":"r","state":"blocked","restart_timeout":"10m","nodes":[{"node_id":"mc-1","state":"released","slot":3}]}}`))
	if err != nil || doc.Roll == nil || !doc.Roll.State.Runs() || doc.Roll.Timeout() != 10*time.Minute || doc.Roll.Count(RollReleased) != 1 {
		t.Fatalf("ParseStoredRoll = %+v, %v", doc, err)
	}
	for _, bad := range []string{`{"roll":{"state":"rolled"}}`, `{"roll":{"state":"rolling","nodes":[{"node_id":"","state":"waiting"}]}}`, `{"roll":{"state":"done","nodes":[{"node_id":"x","state":"gone"}]}}`, `nope`} {
		if _, err := ParseStoredRoll([]byte(bad)); err == nil {
			t.Errorf("ParseStoredRoll(%s) took it", bad)
		}
	}
	if doc, err := ParseStoredRoll([]byte(`{"roll":null}`)); err != nil || doc.Roll != nil {
		t.Errorf("a null roll: %+v, %v", doc, err)
	}
	if StatusCode(ErrNoRoll) != 404 || Sentence(fmt.Errorf("%w: no roll runs", ErrNoRoll)) != "no roll runs" {
		t.Errorf("ErrNoRoll answers %d", StatusCode(ErrNoRoll))
	}
}
