package dst

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
	"time"
)

// host is one simulated machine: a Consul server, a replica's, a memcached
// host or an application's. Its clock is the simulated time plus skew.
type host struct {
	name string
	zone string
	skew time.Duration
	// down is set while the machine is off: nothing reaches it, nothing
	// leaves it.
	down bool
}

// impairment is one fault on one direction of a link: cut (nothing
// passes), loss (each message is lost with this chance) or slow (each
// message is delayed beyond the caller's timeout with this chance). Faults
// on a link add up: the link is cut while any cuts it.
type impairment struct {
	cut        bool
	loss, slow float64
}

// network is the simulated network between hosts: per direction of each
// pair, the impairments in force. A message between two hosts that are up
// and whose link carries no impairment always arrives, at once.
type network struct {
	w     *world
	links map[[2]string][]*impairment
}

func newNetwork(w *world) *network {
	return &network{w: w, links: make(map[[2]string][]*impairment)}
}

// impair adds im to the direction from→to and returns a function that
// removes it again.
func (n *network) impair(from, to string, im impairment) func() {
	p := &im
	k := [2]string{from, to}
	n.links[k] = append(n.links[k], p)
	n.w.truth++
	return func() {
		n.w.truth++
		n.links[k] = slices.DeleteFunc(n.links[k], func(q *impairment) bool { return q == p })
		if len(n.links[k]) == 0 {
			delete(n.links, k)
		}
	}
}

// state returns what is in force on the direction from→to.
func (n *network) state(from, to string) impairment {
	var out impairment
	for _, p := range n.links[[2]string{from, to}] {
		out.cut = out.cut || p.cut
		out.loss = max(out.loss, p.loss)
		out.slow = max(out.slow, p.slow)
	}
	return out
}

// impaired reports whether anything at all is in force between a and b,
// in either direction: the ground truth of "a's messages to b might fail".
func (n *network) impaired(a, b string) bool {
	return len(n.links[[2]string{a, b}]) > 0 || len(n.links[[2]string{b, a}]) > 0
}

// outcome is what became of one request and its answer.
type outcome int

const (
	// delivered: the request was carried out and its answer arrived.
	delivered outcome = iota
	// refused: the far host is down (or nothing listens): nothing done.
	refused
	// lostRequest: the request never arrived (cut, lost or slow): nothing
	// done, the caller times out.
	lostRequest
	// lostAnswer: the request was carried out but its answer never came
	// back (cut, lost or slow): the caller times out.
	lostAnswer
)

func (o outcome) String() string {
	return [...]string{"ok", "refused", "request lost", "answer lost"}[o]
}

// send decides the fate of one request from→to and its answer. The
// decision is a hash of the seed, the step, the hosts, op and key (and
// how many times this very call was made in this step), never the next
// draw of a shared generator, so the order in which the driven code makes
// its calls does not change what happens to them.
func (n *network) send(from, to, op, key string) outcome {
	src, dst := n.w.hosts[from], n.w.hosts[to]
	if src == nil || dst == nil || src.down {
		return lostRequest
	}
	if dst.down {
		return lostRequest // a machine that is off answers nothing, not even a refusal
	}
	if from == to {
		return delivered
	}
	there := n.state(from, to)
	switch {
	case there.cut:
		return lostRequest
	case there.loss > 0 && n.w.chance("loss", from, to, op, key) < there.loss:
		return lostRequest
	case there.slow > 0 && n.w.chance("slow", from, to, op, key) < there.slow:
		// Beyond the caller's timeout: it may have been carried out.
		if n.w.chance("slow-applied", from, to, op, key) < 0.5 {
			return lostAnswer
		}
		return lostRequest
	}
	back := n.state(to, from)
	switch {
	case back.cut:
		return lostAnswer
	case back.loss > 0 && n.w.chance("loss", to, from, op, key) < back.loss:
		return lostAnswer
	case back.slow > 0 && n.w.chance("slow", to, from, op, key) < back.slow:
		return lostAnswer
	}
	return delivered
}

// chance returns a number in [0, 1) fixed by the seed, the step and parts,
// and by how many times the same parts were asked in this step.
func (w *world) chance(parts ...string) float64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], w.cfg.Seed)
	h.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], w.step)
	h.Write(b[:])
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	k := h.Sum64()
	if w.asked == nil || w.askedStep != w.step {
		w.asked, w.askedStep = map[uint64]uint64{}, w.step
	}
	n := w.asked[k]
	w.asked[k] = n + 1
	x := splitmix(k ^ splitmix(n+1))
	return float64(x>>11) / float64(1<<53)
}

// splitmix is SplitMix64's finalizer.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
