package dst

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/internal/staleread"
	"github.com/mcrib/mcrib/mcclient"
)

// Kinds of client operations.
const (
	opGet    = "get"
	opSet    = "set"
	opDelete = "delete"
)

// op is one client operation of the history: when it began and ended (in
// the order of the run's events), what it did and what came of it.
type op struct {
	id         int
	client     string
	kind, key  string
	value      string // the value a set wrote; the value a get returned
	start, end uint64 // sequence numbers: a total order of begins and ends
	at         time.Duration
	// gen is the generation of the client's map when the op began, fresh
	// whether that map was fresh then (mcclient.Client.MapFresh).
	gen   uint64
	fresh bool
	// ok: a set or delete returned success (a delete's "not there" too); a
	// get returned a value (hit) or a miss. A failed write is
	// indeterminate: it may take effect at any time after it began.
	ok  bool
	hit bool
	err string
	// servedBy is the node whose answer a get returned, and warm whether
	// the client's map named it as the slot's warm source.
	servedBy *mcNode
	warm     bool
	// filled: the value it returned had been copied into the node from a
	// warm source (a fill), not written there by a set.
	filled bool
	// reached holds the addresses of the nodes a write of a set or delete
	// reached (its request arrived), by the conn layer.
	reached map[string]bool
	nested  bool
	// rec is the operation as the stale-read check has it (history.go).
	rec *staleread.Op
}

// appClient is one application process: a real mcclient.Client on its own
// host, given readings of the slot map (TakeReading) from a random replica
// it can reach, as HTTPFollower takes them, or from its own real
// HTTPFollower (simhttp.go), doing gets, sets and deletes on a small key
// space.
type appClient struct {
	w      *world
	name   string
	host   *host
	caller *caller
	mc     *mcclient.Client
	// gen and rev are the highest generation and revision it took.
	gen, rev uint64
	// readTruth is when (simulated) the replica whose reading gave the
	// map the client routes by last really read the map from Consul (the
	// ground truth of its age; freshcheck.go).
	readTruth time.Duration
	writes    int
	depth     int
	stack     []*op
}

func (w *world) newClient(i int, h *host) *appClient {
	c := &appClient{w: w, name: h.name, host: h}
	c.caller = &caller{w: w, host: h, name: h.name, client: c}
	mc, err := mcclient.New(mcclient.Options{
		Clock:   hostClock{w: w, host: h},
		WarmTTL: warmTTL,
		// A replay backoff of 1 ms: client operations are whole
		// milliseconds apart, so the backoff's jitter never decides
		// anything and a run stays a function of its seed.
		RetryMin: time.Millisecond, RetryMax: time.Millisecond,
		Dial: func(addr string) (mcclient.Conn, error) { return &conn{c: c.caller, addr: addr}, nil },
	})
	if err != nil {
		panic(err)
	}
	revert.Apply(mc, w.cfg.Reverted) // the self-test's switch
	c.mc = mc
	return c
}

// takeMap takes the current map of a random replica the client can reach,
// as an application following the map over HTTP does (mcclient's
// HTTPFollower): a reading whose ReadAt is the time the answer arrived, by
// the client's clock, less the age the replica answers in X-Mcrib-Map-Age
// (whole milliseconds since its last read of the map from Consul, by its
// own clock: Loop.SlotMapReadAt), so that the real client judges the
// map's freshness.
func (c *appClient) takeMap() {
	w := c.w
	r := w.replicas[w.rng.IntN(len(w.replicas))]
	p := r.proc
	if p == nil || w.net.send(c.host.name, r.host.name, "http", "GET /v1/slotmap") != delivered {
		return
	}
	m := p.loop.SlotMap()
	if m == nil {
		return
	}
	reading := cachenodes.SlotMapReading{Map: m}
	truth := w.now - cachenodes.FreshFor // an age unknown counts as FreshFor old
	if at := p.loop.SlotMapReadAt(); !at.IsZero() {
		age := max(p.clock().Now().Sub(at), 0).Truncate(time.Millisecond)
		reading.ReadAt = hostClock{w: w, host: c.host}.Now().Add(-age)
		if t, ok := w.consul.mapReads[r.host.name]; ok {
			truth = t
		}
	}
	if w.plant.freshLie {
		reading.ReadAt = hostClock{w: w, host: c.host}.Now() // a replica that answers every map as just read
	}
	c.takeReading(reading, p, truth)
}

// takeReading hands the client a reading of the map p answered, whose
// last read from Consul was at truth (simulated time), and tells the
// checker what the client took.
func (c *appClient) takeReading(reading cachenodes.SlotMapReading, p *replicaProc, truth time.Duration) {
	w := c.w
	m := reading.Map
	before := c.mc.SlotMap()
	if err := c.mc.TakeReading(reading); err != nil {
		w.tr.add(w.now, "%s refuses the map of %s (generation %d, revision %d): %v", c.name, p.name(), m.Generation(), m.Revision(), err)
		return
	}
	after := c.mc.SlotMap()
	if after != before {
		c.readTruth = truth
	} else {
		c.readTruth = max(c.readTruth, truth)
	}
	if after != nil && (before == nil || after.Generation() != before.Generation() || !sameWarming(before, after)) {
		w.tr.add(w.now, "%s takes generation %d from %s%s", c.name, after.Generation(), p.name(), w.warmings(after))
	}
	w.chk.onClientMap(c, before, after, p)
}

// warmings describes what warms in m, in simulated time: " (slot 3
// warms from mc-02 until 123.100s)", or "" when nothing does.
func (w *world) warmings(m *cachenodes.SlotMap) string {
	var parts []string
	for i := range m.NumSlots() {
		if wm := m.Warming(i); wm != nil {
			parts = append(parts, fmt.Sprintf("slot %d warms from %s until %.3fs", i, wm.NodeID, wm.Until.Sub(w.start).Seconds()))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// randomOp does one operation on a random key.
func (c *appClient) randomOp() {
	w := c.w
	key := fmt.Sprintf("k%02d", w.rng.IntN(w.cfg.Keys))
	switch x := w.rng.IntN(100); {
	case x < 50:
		c.do(opGet, key)
	case x < 80:
		c.do(opSet, key)
	default:
		c.do(opDelete, key)
	}
}

// do runs one operation through the real client and records it.
func (c *appClient) do(kind, key string) {
	w := c.w
	m := c.mc.SlotMap()
	if m == nil {
		return
	}
	o := &op{id: len(w.history), client: c.name, kind: kind, key: key, at: w.now, gen: m.Generation(), fresh: c.mc.MapFresh(), nested: c.depth > 0}
	w.history = append(w.history, o)
	o.start = w.nextSeq()
	c.stack = append(c.stack, o)
	var err error
	switch kind {
	case opGet:
		var it *memcache.Item
		it, err = c.mc.Get(key)
		if err == nil {
			o.hit, o.value = true, string(it.Value)
		}
		o.ok = err == nil || errors.Is(err, memcache.ErrCacheMiss)
	case opSet:
		c.writes++
		o.value = fmt.Sprintf("%s-%d", c.name, c.writes)
		err = c.mc.Set(&memcache.Item{Key: key, Value: []byte(o.value)})
		o.ok = err == nil
	case opDelete:
		if w.plant.liar != c.name {
			err = c.mc.Delete(key)
		}
		o.ok = err == nil || errors.Is(err, memcache.ErrCacheMiss)
	}
	c.stack = c.stack[:len(c.stack)-1]
	o.end = w.nextSeq()
	if err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
		o.err = err.Error()
	}
	if w.cfg.TraceOps || (o.kind != opGet && !o.ok) || o.nested {
		w.tr.add(w.now, "%s %s %s %s (gen %d): %s", c.name, kind, key, o.value, o.gen, opWord(o))
	}
	w.chk.onWriteDone(c, o, m)
	w.chk.onOp(o)
}

func opWord(o *op) string {
	switch {
	case o.err != "":
		return o.err
	case o.kind == opGet && o.hit:
		return "hit"
	case o.kind == opGet:
		return "miss"
	}
	return "ok"
}

// servedBy records, for the get under way, which node answered with a
// value.
func (c *appClient) servedBy(n *mcNode, key string, it item) {
	if len(c.stack) == 0 {
		return
	}
	o := c.stack[len(c.stack)-1]
	if o.kind != opGet || o.key != key {
		return
	}
	o.servedBy, o.warm, o.filled = n, false, strings.HasPrefix(it.writer, "fill:")
	if m := c.mc.SlotMap(); m != nil && m.AnyWarming() {
		if ws := m.Warming(cachenodes.KeySlot(key, m.NumSlots())); ws != nil && ws.Addr == n.addr {
			o.warm = true
		}
	}
	c.w.chk.onWarmRead(c, o, n)
}

// maybeInterleave runs, now and then, a second operation of the same
// client from inside a call of the first (before its request leaves or
// after its answer came), one level deep: two goroutines of one process
// interleaved at a point the seed chooses.
func (c *appClient) maybeInterleave(op, key string, before bool) {
	if c.depth > 0 || len(c.stack) == 0 {
		return
	}
	where := "after"
	if before {
		where = "before"
	}
	if c.w.chance("interleave", c.name, op, key, where) >= c.w.mix.interleave {
		return
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.w.rng.IntN(2) == 0 {
		c.do([]string{opGet, opSet, opDelete}[c.w.rng.IntN(3)], key)
		return
	}
	c.randomOp()
}

// sameWarming reports whether a and b warm the same slots from the same
// sources until the same times.
func sameWarming(a, b *cachenodes.SlotMap) bool {
	if a.NumSlots() != b.NumSlots() {
		return false
	}
	for i := range a.NumSlots() {
		if !a.Warming(i).Equal(b.Warming(i)) {
			return false
		}
	}
	return true
}
