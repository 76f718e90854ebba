package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// Shape is what --like, and a what-if, learn of a running pool from its
// operator API: its status document and its slot map.
type Shape struct {
	Pool  string
	Nodes int
	Slots int
	// BootLimitMin and BootLimitMax are the floor and the ceiling of its
	// boot limit; 0 when the status did not carry them.
	BootLimitMin, BootLimitMax float64
	// HitRate is its hit rate and GetsPerSecond its gets a second; 0
	// when unknown.
	HitRate, GetsPerSecond float64
	// Flags are its mcrib serve flags; nil when the status did not carry
	// them.
	Flags *mcribapi.PoolFlags
	// Fleet is its nodes and slot map, for a what-if.
	Fleet *Fleet
}

// ParseShape reads a pool's shape from its GET /v1/status and GET
// /v1/slotmap documents.
func ParseShape(status, slotmap []byte) (Shape, error) {
	var st mcribapi.Status
	if err := json.Unmarshal(status, &st); err != nil {
		return Shape{}, fmt.Errorf("%w: reading the status document: %v", ErrBadConfig, err)
	}
	m, err := cachenodes.ParseSlotMap(slotmap)
	if err != nil {
		return Shape{}, fmt.Errorf("%w: reading the slot map document: %v", ErrBadConfig, err)
	}
	nodes := max(len(st.Nodes), m.NumSlots()-vacant(m)+m.NumSpares())
	if nodes < 1 {
		return Shape{}, fmt.Errorf("%w: the pool has no nodes", ErrBadConfig)
	}
	if st.Flags != nil {
		if _, err := st.Flags.Durations(); err != nil {
			return Shape{}, fmt.Errorf("%w: reading the status document: %v", ErrBadConfig, err)
		}
	}
	sh := Shape{Pool: st.Pool, Nodes: nodes, Slots: m.NumSlots(), BootLimitMin: st.BootLimit.Floor, BootLimitMax: st.BootLimit.Ceiling, Flags: st.Flags}
	if st.HitRate != nil {
		sh.HitRate = *st.HitRate
	}
	if st.GetsPerSecond != nil {
		sh.GetsPerSecond = *st.GetsPerSecond
	}
	fleet, err := fleetOf(st.Nodes, m)
	if err != nil {
		return Shape{}, fmt.Errorf("%w: reading the slot map document: %v", ErrBadConfig, err)
	}
	sh.Fleet = fleet
	return sh, nil
}

// fleetOf returns the fleet of a pool: every node its status lists, and
// every node its map names that the status does not (present), with the
// map less its warmings and announces.
func fleetOf(nodes []mcribapi.NodeStatus, m *cachenodes.SlotMap) (*Fleet, error) {
	f := &Fleet{}
	seen := map[string]bool{}
	for _, n := range nodes {
		if n.ID == "" || seen[n.ID] {
			continue
		}
		seen[n.ID] = true
		f.Nodes = append(f.Nodes, FleetNode{ID: n.ID, Addr: n.Addr, AZ: n.AZ, Down: !n.Reachable, Absent: n.Consul != mcribapi.ConsulPresent})
	}
	for _, n := range append(m.Slots(), m.Spares()...) {
		if !n.IsZero() && !seen[n.ID] {
			seen[n.ID] = true
			f.Nodes = append(f.Nodes, FleetNode{ID: n.ID, Addr: n.Addr, AZ: n.AZ})
		}
	}
	spec := m.Spec()
	spec.Warming, spec.Incoming = nil, nil
	settled, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		return nil, err
	}
	f.Map = settled
	return f, nil
}

func vacant(m *cachenodes.SlotMap) int {
	n := 0
	for _, s := range m.Slots() {
		if s.IsZero() {
			n++
		}
	}
	return n
}

// Apply shapes c like s: its nodes, slots and boot-limit bounds, and,
// where c leaves them zero, the flags of mcrib serve it carries and a
// workload of its gets a second whose keys give its hit rate
// (calibrate.go). A pool with fewer nodes than slots is simulated with one
// node per slot.
func (s Shape) Apply(c Config) Config {
	c.Nodes, c.Slots = max(s.Nodes, s.Slots), s.Slots
	if s.BootLimitMax > 0 {
		c.BootLimitMin, c.BootLimitMax = s.BootLimitMin, s.BootLimitMax
	}
	orD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	if f := s.Flags; f != nil {
		d, _ := f.Durations() // ParseShape checked them
		orD(&c.Hold, d[0])
		orD(&c.ProbeInterval, d[1])
		orD(&c.FlushAfterUnreachable, d[2])
		orD(&c.StatsInterval, d[3])
		orD(&c.WarmMin, d[5])
		if c.WarmFor == 0 && f.WarmFor != "" {
			c.WarmFor = d[4]
			if d[4] == 0 {
				c.Policy = Policy{Name: PolicyMCribCold, Cold: true} // --warm-for 0s: every move cold
			}
		}
		c.WarmCopyRate = cmp.Or(c.WarmCopyRate, f.WarmCopyRate)
		c.MaxAbsentFraction = cmp.Or(c.MaxAbsentFraction, f.MaxAbsentFraction)
		c.MaxReplacementsPerMinute = cmp.Or(c.MaxReplacementsPerMinute, f.MaxReplacementsPerMinute)
	}
	if s.GetsPerSecond > 0 && c.Clients == 0 && c.SampledReads == 0 {
		d := c.WithDefaults()
		c.Clients = max(1, int(math.Round(s.GetsPerSecond/d.ReadsPerClient)))
		c.SampledReads = min(maxSampledReads, int(math.Round(float64(c.Clients)*d.ReadsPerClient)))
	}
	if s.HitRate > 0 && s.HitRate < 1 && c.Keys == 0 {
		d := c.WithDefaults()
		c.Keys = keysFor(s.HitRate, d.Slots*d.ItemsPerNode, d.ZipfS)
	}
	return c
}
