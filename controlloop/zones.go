package controlloop

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/ratelimit"
)

// KindZoneAlert is the event kind of a zone more than half of whose slot
// holders became unreachable (CONTRACT.md section 7).
const KindZoneAlert = "zone alert"

// zoneReading is one stats reading of a zone's slot holders.
type zoneReading struct {
	nodes      map[string]ratelimit.Counters
	unreadable int
}

// observeZonesLocked folds one stats reading into each zone's hit-rate
// meter (the pool's smoothing, restarts counted as such); a zone that
// holds no slot loses its meter, so its hit rate is unknown again. l.mu
// must be held.
func (l *Loop) observeZonesLocked(now time.Time, zones map[string]*zoneReading) {
	for zone := range l.zoneMeters {
		if zones[zone] == nil {
			delete(l.zoneMeters, zone)
		}
	}
	l.zoneUnread = nil
	for zone, r := range zones {
		if len(r.nodes) == 0 && r.unreadable > 0 {
			if l.zoneUnread == nil {
				l.zoneUnread = map[string]bool{}
			}
			l.zoneUnread[zone] = true
		}
		m := l.zoneMeters[zone]
		if m == nil {
			if l.zoneMeters == nil {
				l.zoneMeters = map[string]*ratelimit.HitRateMeter{}
			}
			m = &ratelimit.HitRateMeter{}
			l.zoneMeters[zone] = m
		}
		m.Observe(now, r.nodes, r.unreadable)
	}
}

// zonesLocked returns the status document's zones: one per zone known, by
// name, from the nodes' status. l.mu must be held.
func (l *Loop) zonesLocked(nodes []NodeStatus) []ZoneStatus {
	byZone := map[string]*ZoneStatus{}
	for _, n := range nodes {
		z := byZone[n.AZ]
		if z == nil {
			z = &ZoneStatus{Zone: n.AZ}
			byZone[n.AZ] = z
		}
		z.Nodes++
		if n.Slot != nil {
			z.Slots++
		}
		if !n.Reachable {
			z.Unreachable++
		}
		if n.Consul != ConsulPresent {
			z.Absent++
		}
	}
	drains := l.drainsLocked()
	out := make([]ZoneStatus, 0, len(byZone)+len(drains.Zones))
	for zone, e := range drains.Zones {
		if byZone[zone] == nil {
			byZone[zone] = &ZoneStatus{Zone: zone}
		}
		byZone[zone].Drain = e
	}
	for zone, z := range byZone {
		if m := l.zoneMeters[zone]; m != nil && z.Slots > 0 && !l.zoneUnread[zone] {
			if r, ok := m.HitRate(); ok {
				z.HitRate = &r
			}
		}
		out = append(out, *z)
	}
	slices.SortFunc(out, func(a, b ZoneStatus) int { return cmp.Compare(a.Zone, b.Zone) })
	return out
}

// zoneAlertLocked names the zones of m more than half of whose slot
// holders are unreachable, each with the command that would drain it:
// one sentence by zone (nil when none). The zone "" cannot be drained and
// is not named. l.mu must be held.
func (l *Loop) zoneAlertLocked(m *cachenodes.SlotMap) map[string]string {
	if m == nil {
		return nil
	}
	holders, down := map[string]int{}, map[string]int{}
	for i := range m.NumSlots() {
		n := m.Slot(i)
		if n.IsZero() || n.AZ == "" {
			continue
		}
		holders[n.AZ]++
		if s, ok := l.tr.nodes[n.ID]; ok && !s.reachable {
			down[n.AZ]++
		}
	}
	var out map[string]string
	for zone, n := range holders {
		if 2*down[zone] > n {
			if out == nil {
				out = map[string]string{}
			}
			if l.drains != nil && l.drains.Zones[zone] != nil {
				out[zone] = fmt.Sprintf("zone %s: %d of %d slot holders unreachable; it is being drained already (mcrib drain %s; mcrib zones shows its progress)", zone, down[zone], n, zone)
				continue
			}
			out[zone] = fmt.Sprintf("zone %s: %d of %d slot holders unreachable; to move its slots off it: mcrib drain %s --reason \"…\"", zone, down[zone], n, zone)
		}
	}
	return out
}

// joinAlerts is the zone alert of the status: the zones' sentences in
// zone order, joined ("" when none).
func joinAlerts(alerts map[string]string) string {
	zones := slices.Sorted(maps.Keys(alerts))
	parts := make([]string, len(zones))
	for i, zone := range zones {
		parts[i] = alerts[zone]
	}
	return strings.Join(parts, "; ")
}
