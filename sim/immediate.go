package sim

import (
	"context"

	"github.com/mcrib/mcrib/cachenodes"
)

// immediatePolicy is the 2022 behaviour that mcrib replaced, kept here as
// the baseline: a slot holder is replaced by a spare (flushed first) as
// soon as Consul stops listing it as passing, and a node that Consul lists
// again is flushed and becomes a spare. It never probes; Consul's word is
// all it goes by.
type immediatePolicy struct {
	w      *world
	routes []int
	spares []int // node indexes, in the order they became spares
	down   []bool
	flushN int
	replN  int
}

// newImmediatePolicy fills the slots with the first nodes, as a new pool
// does, and keeps the rest as spares.
func newImmediatePolicy(w *world, slots int) *immediatePolicy {
	p := &immediatePolicy{w: w, routes: make([]int, slots), down: make([]bool, len(w.nodes))}
	for s := range p.routes {
		p.routes[s] = -1
		if s < len(w.nodes) {
			p.routes[s] = s
		}
	}
	for i := slots; i < len(w.nodes); i++ {
		p.spares = append(p.spares, i)
	}
	return p
}

func (p *immediatePolicy) onConsul(_ context.Context, m cachenodes.Membership) {
	holder := make(map[int]int, len(p.routes))
	for s, i := range p.routes {
		if i >= 0 {
			holder[i] = s
		}
	}
	for _, in := range m.Instances {
		i, ok := p.w.byID[in.ID]
		if !ok {
			continue
		}
		switch {
		case !in.Present && !p.down[i]:
			p.down[i] = true
			p.dropSpare(i)
			if s, ok := holder[i]; ok {
				p.routes[s] = -1
				delete(holder, i)
				p.replN++
				p.fill(s)
			}
		case in.Present && p.down[i]:
			p.down[i] = false
			if p.w.flush(i) == nil {
				p.flushN++
			}
			p.spares = append(p.spares, i)
		}
	}
	for s, i := range p.routes {
		if i < 0 {
			p.fill(s)
		}
	}
}

// fill puts the first spare that flushes into slot s; a spare that does
// not answer stays a spare, at the back.
func (p *immediatePolicy) fill(s int) {
	for range len(p.spares) {
		i := p.spares[0]
		p.spares = p.spares[1:]
		if p.w.flush(i) != nil {
			p.spares = append(p.spares, i)
			continue
		}
		p.flushN++
		p.routes[s] = i
		return
	}
}

func (p *immediatePolicy) dropSpare(i int) {
	for k, j := range p.spares {
		if j == i {
			p.spares = append(p.spares[:k], p.spares[k+1:]...)
			return
		}
	}
}

func (p *immediatePolicy) onProbeInterval(context.Context) {}
func (p *immediatePolicy) route() []int                    { return p.routes }
func (p *immediatePolicy) flushes() int                    { return p.flushN }
func (p *immediatePolicy) replacements() int               { return p.replN }
