package apiserver

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// TestStatusDocumentRoundTrip checks that the document the API composes
// carries the limiter's hit rate and boot-limit document (not what the
// loop's status held in those fields), and that it reads back whole.
func TestStatusDocumentRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	slot := 0
	st := mcribapi.Status{
		Pool: "default", Leader: true, LeaderID: "host-a:7070", Generation: 7, LastReconcileAt: &at,
		ConsulReachable: true, HitRate: ratelimit.RateOf(0.1), BootLimit: ratelimit.Document{Reason: "the loop's own value must not show"},
		Nodes: []mcribapi.NodeStatus{{ID: "mc-1", Addr: "127.0.0.1:11211", Slot: &slot, Consul: "present", Reachable: true, State: "serving"}},
	}
	boot := ratelimit.Document{Mode: "manual", Limit: 250, Burst: 25, HitRate: ratelimit.RateOf(0.72), Floor: 10, Ceiling: 1000,
		UpdatedAt: at, Reason: "pinned", AutoLimit: 500}
	doc := statusDocument(st, boot)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"hit_rate":0.72`, `"boot_limit":{"mode":"manual","limit":250,"burst":25`, `"leader_id":"host-a:7070"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("status document %s does not contain %s", b, want)
		}
	}
	if n := strings.Count(string(b), `"hit_rate"`); n != 2 { // the document's and the boot limit's
		t.Errorf("status document %s has %d hit_rate fields, want 2", b, n)
	}

	var got mcribapi.Status
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, doc) {
		t.Errorf("decoded\n %+v\nwant\n %+v", got, doc)
	}
}

// knownRate is a boot limiter that has, or has not, measured a hit rate.
type knownRate struct {
	BootLimiter
	known bool
}

func (k knownRate) HitRate() (float64, bool) { return 0, k.known }

func TestStatusHitRateIsNullBeforeTraffic(t *testing.T) {
	for _, tc := range []struct {
		known bool
		want  string
	}{
		{false, `"hit_rate":null`},
		{true, `"hit_rate":0.5`},
	} {
		doc := withKnownHitRate(statusDocument(mcribapi.Status{}, ratelimit.Document{HitRate: ratelimit.RateOf(0.5)}), knownRate{known: tc.known})
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b[strings.Index(string(b), `"hit_rate"`):]), tc.want) {
			t.Errorf("measured %v: document %s, want %s", tc.known, b, tc.want)
		}
	}
}
