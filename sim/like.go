package sim

import (
	"encoding/json"
	"fmt"

	"github.com/mcrib/mcrib/cachenodes"
)

// Shape is what --like learns of a running pool from its operator API.
type Shape struct {
	Pool  string
	Nodes int
	Slots int
	// BootLimitMin and BootLimitMax are the floor and the ceiling of its
	// boot limit; 0 when the status did not carry them.
	BootLimitMin, BootLimitMax float64
}

// ParseShape reads a pool's shape from its GET /v1/status and GET
// /v1/slotmap documents.
func ParseShape(status, slotmap []byte) (Shape, error) {
	var st struct {
		Pool      string            `json:"pool"`
		Nodes     []json.RawMessage `json:"nodes"`
		BootLimit struct {
			Floor   float64 `json:"floor"`
			Ceiling float64 `json:"ceiling"`
		} `json:"boot_limit"`
	}
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
	return Shape{Pool: st.Pool, Nodes: nodes, Slots: m.NumSlots(), BootLimitMin: st.BootLimit.Floor, BootLimitMax: st.BootLimit.Ceiling}, nil
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

// Apply shapes c like s: its nodes, slots and boot-limit bounds. A pool
// with fewer nodes than slots is simulated with one node per slot.
func (s Shape) Apply(c Config) Config {
	c.Nodes, c.Slots = max(s.Nodes, s.Slots), s.Slots
	if s.BootLimitMax > 0 {
		c.BootLimitMin, c.BootLimitMax = s.BootLimitMin, s.BootLimitMax
	}
	return c
}
