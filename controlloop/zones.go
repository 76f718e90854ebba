package controlloop

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/mcribapi"
)

// minAlertHolders is the fewest unreachable slot holders of one zone that
// raise its zone alert: one dead node is a node to replace (its hold says
// when), not a zone to drain.
const minAlertHolders = 2

// zoneWatch is what the loop watches of each zone: which alert, and each
// zone's hit rate.
type zoneWatch struct {
	// alert is the zone alert of the status: the alerting zones'
	// sentences joined ("" when none); alerting holds each alerting
	// zone's sentence, by zone: a zone entering it gets an event of its
	// own, and so does its end.
	alert    string
	alerting map[string]string
	// meters measure each zone's hit rate from the stats readings
	// (HitCounters), as the pool's is measured.
	meters map[string]*hitrate.Meter
	// unread names the zones none of whose served slots' holders could
	// be read at the last stats reading: their hit rate is unknown, not
	// the last one measured. (A zone none of whose slots is served reads
	// 0: every get of its keys misses.)
	unread map[string]bool
}

// zoneReading is one stats reading of a zone's slot holders: their
// counters and what it knows of the zone's slots (the slots its nodes
// hold, twins included).
type zoneReading struct {
	nodes map[string]hitrate.Counters
	slots hitrate.Slots
}

// observe folds one stats reading at now into each zone's hit-rate meter
// (the pool's smoothing, restarts counted as such, the slots with no live
// holder counted as all misses for their share); a zone that holds no
// slot loses its meter, so its hit rate is unknown again.
func (z *zoneWatch) observe(now time.Time, zones map[string]*zoneReading) {
	for zone := range z.meters {
		if zones[zone] == nil {
			delete(z.meters, zone)
		}
	}
	z.unread = nil
	for zone, r := range zones {
		if len(r.nodes) == 0 && r.slots.Unreadable > 0 {
			if z.unread == nil {
				z.unread = map[string]bool{}
			}
			z.unread[zone] = true
		}
		m := z.meters[zone]
		if m == nil {
			if z.meters == nil {
				z.meters = map[string]*hitrate.Meter{}
			}
			m = &hitrate.Meter{}
			z.meters[zone] = m
		}
		m.Observe(now, r.nodes, r.slots)
	}
}

// statuses returns the status document's zones: one per zone known, by
// name, from the nodes' status and drains, the drain document as
// answered, each with its alert.
func (z *zoneWatch) statuses(nodes []mcribapi.NodeStatus, drains mcribapi.DrainDoc) []mcribapi.ZoneStatus {
	byZone := map[string]*mcribapi.ZoneStatus{}
	for _, n := range nodes {
		zs := byZone[n.AZ]
		if zs == nil {
			zs = &mcribapi.ZoneStatus{Zone: n.AZ}
			byZone[n.AZ] = zs
		}
		zs.Nodes++
		if n.Slot != nil {
			zs.Slots++
		}
		if !n.Reachable {
			zs.Unreachable++
		}
		if n.Consul != mcribapi.ConsulPresent {
			zs.Absent++
		}
	}
	out := make([]mcribapi.ZoneStatus, 0, len(byZone)+len(drains.Zones))
	for zone, e := range drains.Zones {
		if byZone[zone] == nil {
			byZone[zone] = &mcribapi.ZoneStatus{Zone: zone}
		}
		byZone[zone].Drain = e
	}
	for zone, zs := range byZone {
		if m := z.meters[zone]; m != nil && zs.Slots > 0 && !z.unread[zone] {
			if r, ok := m.HitRate(); ok {
				zs.HitRate = &r
			}
		}
		_, zs.Alert = z.alerting[zone]
		out = append(out, *zs)
	}
	slices.SortFunc(out, func(a, b mcribapi.ZoneStatus) int { return cmp.Compare(a.Zone, b.Zone) })
	return out
}

// watch finds the zones of m that alert by the verdicts of tr (drains the
// drain document known, nil when none), tells in r each zone that newly
// alerts and each alert that ended, records them for the status and
// returns the zone alert of the status ("" when none).
func (z *zoneWatch) watch(tr *tracker, m *cachenodes.SlotMap, drains *mcribapi.DrainDoc, r *report) string {
	alerts := zoneAlerts(tr, m, drains)
	for _, zone := range slices.Sorted(maps.Keys(alerts)) {
		// One event for each zone that newly alerts, naming it and its
		// lever; a zone already alerting is not named again.
		if _, was := z.alerting[zone]; !was {
			r.log(slog.LevelWarn, "zone alert", "zone", zone, "alert", alerts[zone])
			r.event(mcribapi.Event{Kind: mcribapi.EventZoneAlert, Reason: alerts[zone]})
		}
	}
	for _, zone := range slices.Sorted(maps.Keys(z.alerting)) {
		// Every alert has its end, naming the zone (section 7).
		if _, still := alerts[zone]; !still {
			over := alertOver(tr, m, zone)
			r.log(slog.LevelInfo, "zone alert over", "zone", zone, "detail", over)
			r.event(mcribapi.Event{Kind: mcribapi.EventZoneAlertOver, Reason: over})
		}
	}
	z.alerting = alerts
	z.alert = joinAlerts(alerts)
	return z.alert
}

// zoneHolders counts, by zone, the slot holders of m and how many of them
// are unreachable by the pool's verdict. The zone "" is left out: it
// cannot be drained.
func (t *tracker) zoneHolders(m *cachenodes.SlotMap) (holders, down map[string]int) {
	holders, down = map[string]int{}, map[string]int{}
	if m == nil {
		return holders, down
	}
	for i := range m.NumSlots() {
		n := m.Slot(i)
		if n.IsZero() || n.AZ == "" || m.IsTwin(i) {
			continue // a twin's holder is slot s's, counted there
		}
		holders[n.AZ]++
		if s, ok := t.nodes[n.ID]; ok && !s.reachable {
			down[n.AZ]++
		}
	}
	return holders, down
}

// alerting reports whether a zone with holders slot holders, down of them
// unreachable, raises the zone alert: more than half of them, and at least
// minAlertHolders.
func alerting(holders, down int) bool {
	return 2*down > holders && down >= minAlertHolders
}

// zoneAlerts names the zones of m that alert (more than half of their slot
// holders, and at least two, unreachable by the verdicts of tr), each with
// the command that would drain it, or says it is being drained (drains):
// one sentence by zone (nil when none).
func zoneAlerts(tr *tracker, m *cachenodes.SlotMap, drains *mcribapi.DrainDoc) map[string]string {
	holders, down := tr.zoneHolders(m)
	var out map[string]string
	for zone, n := range holders {
		if !alerting(n, down[zone]) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if drains != nil && drains.Zones[zone] != nil {
			out[zone] = fmt.Sprintf("zone %s: %d of %d slot holders unreachable; it is being drained already (mcrib drain %s; mcrib zones shows its progress)", zone, down[zone], n, zone)
			continue
		}
		out[zone] = fmt.Sprintf("zone %s: %d of %d slot holders unreachable; to move its slots off it: mcrib drain %s --reason \"…\"", zone, down[zone], n, zone)
	}
	return out
}

// alertOver says, in one sentence, why zone's alert ended over m.
func alertOver(tr *tracker, m *cachenodes.SlotMap, zone string) string {
	holders, down := tr.zoneHolders(m)
	if holders[zone] == 0 {
		return fmt.Sprintf("zone %s: its zone alert is over: it holds no slot any more", zone)
	}
	return fmt.Sprintf("zone %s: its zone alert is over: %d of %d slot holders unreachable now", zone, down[zone], holders[zone])
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
