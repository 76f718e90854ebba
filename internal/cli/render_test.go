package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// testNow is the clock of the renderers in the tests: 2 s after the
// documents' last reconcile and update.
var testNow = time.Date(2026, 11, 29, 13, 0, 2, 0, time.UTC)

func TestPrintStatus(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	slot := func(n int) *int { return &n }
	healthy := mcribapi.Status{
		Pool: "default", Leader: true, LeaderID: "host-a:7070",
		Generation: 7, LastReconcileAt: &at, ConsulReachable: true,
		Nodes: []mcribapi.NodeStatus{
			{ID: "mc-1", Addr: "127.0.0.1:11211", AZ: "a", Slot: slot(0), Consul: "present", Reachable: true, State: "serving"},
			{ID: "mc-9", Addr: "127.0.0.1:11219", Slot: slot(-1), Consul: "absent", State: "down", AbsentSince: &at, Flaps: 3},
		},
		HitRate:   func(f float64) *float64 { return &f }(0.97),
		BootLimit: ratelimit.Document{Mode: "auto", Limit: 1000, Burst: 100},
	}
	troubled := mcribapi.Status{
		Pool: "p2", LeaderID: "host-b:7070", Generation: 2,
		Frozen:     true,
		Freeze:     &mcribapi.FreezeDoc{Frozen: true, Reason: "deploy", At: at.Add(-time.Hour), By: "alice"},
		AutoFrozen: true, AutoFreezeReason: "3 of 4 nodes absent",
		DiscoveryFault: true, DiscoveryFaultReason: "consul listed no instance",
		Nodes: []mcribapi.NodeStatus{{ID: "mc-2", Addr: "10.0.0.2:11211", State: "held"}},
	}
	tests := []struct {
		name string
		doc  mcribapi.Status
		sent sentFields
		want string
	}{
		{name: "healthy leader", doc: healthy, want: `pool:              default
leader:            yes (host-a:7070)
frozen:            no
auto-frozen:       no
generation:        7
last reconcile:    2 s ago, at 2026-11-29T13:00:00Z
consul reachable:  yes
hit rate:          0.97
slots unserved:    0
boot limit:        auto, 1000 boots/s, burst 100
vacant slots:      0
blocked:           no replacement held back

ID    ADDR             AZ  SLOT  CONSUL   REACHABLE  STATE    FLAPS
mc-1  127.0.0.1:11211  a   0     present  yes        serving  0
mc-9  127.0.0.1:11219  -   -     absent   no         down     3
`},
		{name: "frozen follower, every field sent", doc: troubled, want: `pool:              p2
leader:            no (leader is host-b:7070)
frozen:            yes: "deploy" by alice, 1 h ago, at 2026-11-29T12:00:00Z
auto-frozen:       yes: 3 of 4 nodes absent
discovery fault:   yes: consul listed no instance
generation:        2
last reconcile:    never
consul reachable:  no
hit rate:          unknown
slots unserved:    0
boot limit:        unknown, 0 boots/s, burst 0
vacant slots:      0
blocked:           no replacement held back

ID    ADDR            AZ  SLOT  CONSUL   REACHABLE  STATE  FLAPS
mc-2  10.0.0.2:11211  -   -     unknown  no         held   0
`},
		{name: "fields not sent print as unknown", doc: troubled,
			sent: sentFields{"pool": true, "generation": true, "nodes": true, "nodes.0": true, "nodes.0.id": true},
			want: `pool:              p2
leader:            no (leader is host-b:7070)
frozen:            yes: "deploy" by alice, 1 h ago, at 2026-11-29T12:00:00Z
auto-frozen:       yes: 3 of 4 nodes absent
discovery fault:   yes: consul listed no instance
generation:        2
last reconcile:    never
consul reachable:  unknown
hit rate:          unknown
boot limit:        unknown

ID    ADDR     AZ  SLOT  CONSUL   REACHABLE  STATE  FLAPS
mc-2  unknown  -   -     unknown  unknown    held   unknown
`},
		{name: "boot limit without its numbers", doc: healthy,
			sent: sentFields{"generation": true, "consul_reachable": true, "hit_rate": true, "boot_limit": true, "boot_limit.mode": true,
				"nodes.0.reachable": true, "nodes.0.flaps": true, "nodes.0.addr": true, "nodes.0.consul": true,
				"nodes.1.reachable": true, "nodes.1.flaps": true, "nodes.1.addr": true, "nodes.1.consul": true},
			want: `pool:              default
leader:            yes (host-a:7070)
frozen:            no
auto-frozen:       no
generation:        7
last reconcile:    2 s ago, at 2026-11-29T13:00:00Z
consul reachable:  yes
hit rate:          0.97
boot limit:        auto, unknown boots/s, burst unknown

ID    ADDR             AZ  SLOT  CONSUL   REACHABLE  STATE    FLAPS
mc-1  127.0.0.1:11211  a   0     present  yes        serving  0
mc-9  127.0.0.1:11219  -   -     absent   no         down     3
`},
		{name: "no leader, frozen without a document, no nodes",
			doc: mcribapi.Status{Frozen: true, BootLimit: ratelimit.Document{Mode: "manual", Limit: 2.5, Burst: 1}},
			want: `pool:              unknown
leader:            no (no leader known)
frozen:            yes
auto-frozen:       no
generation:        0
last reconcile:    never
consul reachable:  no
hit rate:          unknown
slots unserved:    0
boot limit:        manual, 2.5 boots/s, burst 1
vacant slots:      0
blocked:           no replacement held back

no nodes
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printStatus(&b, tt.doc, tt.sent, testNow)
			if b.String() != tt.want {
				t.Errorf("printStatus\n got %q\nwant %q\n%s", b.String(), tt.want, b.String())
			}
		})
	}
}

func TestPrintSlots(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		spec cachenodes.SlotMapSpec
		want string
	}{
		{name: "vacant slot and a spare", spec: cachenodes.SlotMapSpec{
			Pool: "default", Generation: 7, UpdatedAt: at,
			Slots: []cachenodes.Node{
				{ID: "mc-1", Addr: "127.0.0.1:11211", AZ: "a"},
				{},
				{ID: "mc-3", Addr: "127.0.0.1:11213"},
				{ID: "mc-4", Addr: "127.0.0.1:11214", AZ: "c"},
			},
			Spares: []cachenodes.Node{{ID: "mc-9", Addr: "127.0.0.1:11219", AZ: "b"}},
		}, want: `pool default  generation 7  slots 4  updated 2 s ago, at 2026-11-29T13:00:00Z

SLOT  NODE      ADDR             AZ
0     mc-1      127.0.0.1:11211  a
1     (vacant)  -                -
2     mc-3      127.0.0.1:11213  -
3     mc-4      127.0.0.1:11214  c

SPARES:
  mc-9  127.0.0.1:11219  b
`},
		{name: "new pool, never updated, no spares", spec: cachenodes.SlotMapSpec{
			Pool:  "p",
			Slots: []cachenodes.Node{{}, {}},
		}, want: `pool p  generation 0  slots 2  updated never

SLOT  NODE      ADDR  AZ
0     (vacant)  -     -
1     (vacant)  -     -

SPARES: none
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := cachenodes.NewSlotMap(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			printSlots(&b, m, testNow)
			if b.String() != tt.want {
				t.Errorf("printSlots\n got %q\nwant %q\n%s", b.String(), tt.want, b.String())
			}
		})
	}
}

func TestPrintRateLimit(t *testing.T) {
	cut := ratelimit.Document{Mode: "auto", Limit: 250, Burst: 25, HitRate: ratelimit.RateOf(0.72), Floor: 10, Ceiling: 1000,
		Reason: "hit rate 0.72 below 0.80: cut from 500 to 250"}
	tests := []struct {
		name string
		doc  ratelimit.Document
		sent sentFields
		want string
	}{
		{name: "auto", doc: cut, want: "mode auto, limit 250 boots/s, burst 25, hit rate 0.72\n" +
			"reason: hit rate 0.72 below 0.80: cut from 500 to 250\n"},
		{name: "manual fraction, no reason", doc: ratelimit.Document{Mode: "manual", Limit: 0.25, Burst: 1, HitRate: ratelimit.RateOf(1)},
			want: "mode manual, limit 0.25 boots/s, burst 1, hit rate 1.00\nreason: (none)\n"},
		{name: "fields not sent", doc: ratelimit.Document{}, sent: sentFields{"reason": true},
			want: "mode unknown, limit unknown boots/s, burst unknown, hit rate unknown\nreason: (none)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printRateLimit(&b, tt.doc, tt.sent)
			if b.String() != tt.want {
				t.Errorf("printRateLimit\n got %q\nwant %q", b.String(), tt.want)
			}
		})
	}
}

func TestPrintSlotsShowsWarming(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{
		Pool: "default", Generation: 3, UpdatedAt: at,
		Slots: []cachenodes.Node{
			{ID: "mc-1", Addr: "10.0.0.1:11211", AZ: "a"},
			{ID: "mc-7", Addr: "10.0.0.7:11211", AZ: "a"},
		},
		Warming: []*cachenodes.Warming{nil, {NodeID: "mc-2", Addr: "10.0.1.2:11211", Until: at.Add(2 * time.Minute)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printSlots(&b, m, at.Add(90*time.Second))
	want := `pool default  generation 3  slots 2  updated 90 s ago, at 2026-11-29T13:00:00Z

SLOT  NODE  ADDR            AZ  WARMING
0     mc-1  10.0.0.1:11211  a   -
1     mc-7  10.0.0.7:11211  a   from mc-2 until 2026-11-29T13:02:00Z (in 30 s)

SPARES: none
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestPrintSlotsShowsAnnouncesAndEndedWarmings: mcrib slots names a
// slot's incoming node and from when it serves, and a warming that ended
// early with until when its old holder is still written.
func TestPrintSlotsShowsAnnouncesAndEndedWarmings(t *testing.T) {
	at := testNow.Add(12 * time.Second)
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "p", Generation: 3, Revision: 9, UpdatedAt: testNow,
		Slots:    []cachenodes.Node{{ID: "mc-1", Addr: "10.0.0.1:11211"}, {ID: "mc-2", Addr: "10.0.0.2:11211"}},
		Incoming: []*cachenodes.Incoming{{NodeID: "mc-9", Addr: "10.0.0.9:11211", ServesAt: at, Until: at}, nil},
		Warming:  []*cachenodes.Warming{nil, {NodeID: "mc-3", Addr: "10.0.0.3:11211", Until: testNow.Add(time.Hour), EndedAt: testNow}}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printSlots(&b, m, testNow)
	for _, want := range []string{"incoming mc-9 from", "from mc-3 ended", "written until"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printSlots lacks %q:\n%s", want, b.String())
		}
	}
}
