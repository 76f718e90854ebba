package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// TestZoneHarnessChecks checks the zone tests' own judges on made-up maps:
// a map that breaks the slot map's rules is a violation to the watcher,
// the pace of a drain, the spread and the flushes; and the layout of a
// bed with several memcached per host.
func TestZoneHarnessChecks(t *testing.T) {
	mk := func(ids ...string) *cachenodes.SlotMap {
		spec := cachenodes.SlotMapSpec{Pool: "zones", Generation: 1}
		for _, id := range ids {
			n := cachenodes.Node{}
			if id != "" {
				n = cachenodes.Node{ID: id, Addr: id + ":11211"}
			}
			spec.Slots = append(spec.Slots, n)
		}
		m, err := cachenodes.NewSlotMap(spec)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	twice := `{"pool":"zones","num_slots":2,"generation":1,"slots":[{"slot":0,"node_id":"a1","addr":"a1:11211"},{"slot":1,"node_id":"a1","addr":"a1:11211"}],"spares":[]}`
	if _, err := cachenodes.ParseSlotMap([]byte(twice)); !errors.Is(err, cachenodes.ErrInvalidSlotMap) {
		t.Errorf("a map with a1 in two slots decodes (%v): the watcher would not see the violation", err)
	}

	zoneOf := map[string]string{"a1": "a", "a2": "a", "b1": "b", "b2": "b", "b3": "b", "c1": "c"}
	at := time.Unix(0, 0)
	seen := func(steps ...struct {
		sec float64
		m   *cachenodes.SlotMap
	}) []mapSample {
		var out []mapSample
		for _, s := range steps {
			out = append(out, mapSample{at: at.Add(time.Duration(s.sec * float64(time.Second))), m: s.m})
		}
		return out
	}
	type step = struct {
		sec float64
		m   *cachenodes.SlotMap
	}
	full, one, none := mk("b1", "b2", "b3", "a1"), mk("a2", "c1", "b3", "a1"), mk("a2", "c1", "a1", "")
	paced := seen(step{0, full}, step{0.5, one}, step{2, one}, step{3.4, none})
	if bad := paceViolation(paced, zoneOf, "b", 2, 2300*time.Millisecond, false); bad != "" {
		t.Errorf("a drain of 2 then 1, 2.9 s apart: %s", bad)
	}
	rushed := seen(step{0, full}, step{0.5, one}, step{1.5, none})
	if bad := paceViolation(rushed, zoneOf, "b", 2, 2300*time.Millisecond, false); !strings.Contains(bad, "from 3 to 0") {
		t.Errorf("a drain of 3 slots within 1.5 s in steps of 2: %q, want a violation", bad)
	}
	back := seen(step{0, none}, step{0.1, one}, step{1, full})
	if bad := paceViolation(back, zoneOf, "b", 2, 2300*time.Millisecond, true); !strings.Contains(bad, "from 0 to 3") {
		t.Errorf("a return of 3 slots within 1 s in steps of 2: %q, want a violation", bad)
	}
	if got := zoneCountsSeen(paced, zoneOf, "b", at); got != "3@0.0s → 1@0.5s → 0@3.4s" {
		t.Errorf("zoneCountsSeen = %q", got)
	}

	if bad := spreadProblem(map[string]int{"a": 3, "b": 3, "c": 2}, []string{"a", "b", "c"}, 8); bad != "" {
		t.Errorf("a:3 b:3 c:2 of 8: %s", bad)
	}
	if bad := spreadProblem(map[string]int{"a": 4, "b": 4}, []string{"a", "b", "c"}, 8); !strings.Contains(bad, "zone a holds 4") {
		t.Errorf("a:4 b:4 of 8 over three zones: %q, want a problem", bad)
	}

	before := map[string]uint64{"a1": 0, "a2": 0, "c1": 1, "b1": 0}
	if bad := flushChanges(before, map[string]uint64{"a1": 0, "a2": 1, "c1": 2, "b1": 0}, entered(full, one)); len(bad) != 0 {
		t.Errorf("the entering nodes flushed once each: %q", bad)
	}
	bad := flushChanges(before, map[string]uint64{"a1": 1, "a2": 2, "c1": 1, "b1": 0}, entered(full, one))
	if len(bad) != 3 || !strings.Contains(bad[0], "a1 cmd_flush 0 → 1, want 0") || !strings.Contains(bad[1], "a2 cmd_flush 0 → 2, want 1") || !strings.Contains(bad[2], "c1 cmd_flush 1 → 1, want 2") {
		t.Errorf("a node flushed that entered nothing, one flushed twice, one not at all: %q", bad)
	}

	// The bed of the zone-drain benchmark: 54 memcached in three zones, six
	// to a host, so each zone fills three hosts of its own.
	o := hostsOptions{nodes: 54, zones: 3, perHost: 6}
	hostZone := map[int]string{}
	ports := map[[2]int]bool{}
	for i := range o.nodes {
		id, az := o.nodeIdentity(i)
		h, port := o.hostOf(i)
		if z, ok := hostZone[h]; ok && z != az {
			t.Errorf("host %d holds zones %s and %s (node %s)", h, z, az, id)
		}
		hostZone[h] = az
		if ports[[2]int{h, port}] || port < 11211 || port > 11216 {
			t.Errorf("node %s on host %d port %d: taken twice or outside 11211..11216", id, h, port)
		}
		ports[[2]int{h, port}] = true
	}
	if id, az := o.nodeIdentity(53); len(hostZone) != 9 || id != "mc-c-18" || az != "c" {
		t.Errorf("%d hosts, last node %s in zone %s; want 9 hosts, mc-c-18 in zone c", len(hostZone), id, az)
	}
	if h, port := (hostsOptions{nodes: 5}).hostOf(4); h != 4 || port != 11211 {
		t.Errorf("one memcached per host: node 4 on host %d port %d, want host 4 port 11211", h, port)
	}
}
