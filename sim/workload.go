package sim

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// workload is the cache clients and the database: Zipf-distributed reads
// routed by the slot map, client boots that each cost a burst of reads, and
// a database with a fixed capacity a second beyond which queries fail and
// leave the cache unfilled.
type workload struct {
	cfg    Config
	w      *world
	rng    *rand.Rand
	zipf   *zipfKeys
	weight uint64 // real reads one sampled read stands for

	// warm is each slot's warm source (warmmoves.go); nil when the
	// policy moves no slot warm.
	warm []warmSource

	running, pending  int     // clients serving, clients waiting to boot
	carry, churnCarry float64 // fractional sampled reads and restarts

	// this second's figures, in sampled reads and real queries
	hits, reads uint64
	dbDemand    float64
	dbUsed      float64
}

func newWorkload(cfg Config, w *world, rng *rand.Rand) *workload {
	real := float64(cfg.Clients) * cfg.ReadsPerClient
	return &workload{
		cfg: cfg, w: w, rng: rng,
		zipf:    newZipfKeys(rng, cfg.ZipfS, cfg.Keys),
		weight:  uint64(max(1, math.Round(real/float64(cfg.SampledReads)))),
		running: cfg.Clients,
	}
}

// slotOf returns the slot of key k: a fixed hash of the key.
func slotOf(k uint32, slots int) int {
	x := uint64(k) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(slots))
}

// prefill gives each slot holder the contents an LRU settles at under the
// workload, as if it had been serving for a long time. Under independent
// Zipf reads an LRU of C items holds the C distinct keys read most
// recently, and the time since key k was last read is exponential with the
// key's read rate: so each key gets such an age, each node keeps the
// youngest C keys of its slot, and they go in oldest first (the youngest
// most recently used).
func (wl *workload) prefill(route []int) {
	type aged struct {
		age float32
		key uint32
	}
	byNode := make(map[int][]aged)
	for k := range wl.cfg.Keys {
		i := route[slotOf(uint32(k), len(route))]
		if i < 0 {
			continue
		}
		rate := math.Pow(float64(k)+1, -wl.cfg.ZipfS) // relative; only the order matters
		byNode[i] = append(byNode[i], aged{age: float32(wl.rng.ExpFloat64() / rate), key: uint32(k)})
	}
	for i := range wl.w.nodes {
		ks := byNode[i]
		slices.SortFunc(ks, func(a, b aged) int { return cmp.Or(cmp.Compare(a.age, b.age), cmp.Compare(a.key, b.key)) })
		ks = ks[:min(len(ks), wl.cfg.ItemsPerNode)]
		for j := len(ks) - 1; j >= 0; j-- {
			wl.w.nodes[i].cache.set(ks[j].key)
		}
	}
}

// dbQuery sends one sampled read's worth of queries to the database and
// reports whether they were answered.
func (wl *workload) dbQuery() bool {
	q := float64(wl.weight)
	wl.dbDemand += q
	if wl.dbUsed+q > wl.cfg.DBCapacity {
		return false
	}
	wl.dbUsed += q
	return true
}

// read reads one key through the cache; a miss goes to the database and,
// when it answers, fills the cache. It reports whether the read was served
// (from the cache or the database).
func (wl *workload) read(route []int) bool {
	k := wl.zipf.next()
	wl.reads++
	s := slotOf(k, len(route))
	i := route[s]
	if i < 0 || !wl.w.servesClients(i) {
		return wl.dbQuery()
	}
	nd := wl.w.nodes[i]
	if nd.cache.get(k) {
		nd.hits += wl.weight
		wl.hits++
		return true
	}
	nd.misses += wl.weight
	if wl.warm != nil && wl.warmGet(s, i, k) {
		wl.hits++
		return true
	}
	if !wl.dbQuery() {
		return false
	}
	nd.cache.set(k)
	if wl.warm != nil {
		wl.warmSet(s, i, k)
	}
	return true
}

// second runs one second of traffic: the running clients' reads and the
// reads of the boots admitted, spread among them. A boot whose reads the
// database does not all answer fails, and its client waits to boot again.
func (wl *workload) second(route []int, boots int) {
	wl.hits, wl.reads, wl.dbDemand, wl.dbUsed = 0, 0, 0, 0
	wl.carry += float64(wl.cfg.SampledReads) * float64(wl.running) / float64(wl.cfg.Clients)
	n := int(wl.carry)
	wl.carry -= float64(n)
	per := max(1, int(math.Round(float64(wl.cfg.BootReads)/float64(wl.weight))))
	done, r := 0, 0
	for b := range boots {
		for target := (b + 1) * n / (boots + 1); r < target; r++ {
			wl.read(route)
		}
		ok := true
		for range per {
			ok = wl.read(route) && ok
		}
		if ok {
			done++
		}
	}
	for ; r < n; r++ {
		wl.read(route)
	}
	wl.pending -= done
	wl.running += done
}

// churn restarts clients at ChurnPerHour each: they stop reading and wait
// to boot.
func (wl *workload) churn() {
	wl.churnCarry += float64(wl.running) * wl.cfg.ChurnPerHour / 3600
	for wl.churnCarry >= 1 && wl.running > 0 {
		wl.churnCarry--
		wl.running--
		wl.pending++
	}
}

// restartAll makes every client wait to boot (a fleet restart).
func (wl *workload) restartAll() {
	wl.pending += wl.running
	wl.running = 0
}

// hitRate returns this second's hit rate, NaN without reads.
func (wl *workload) hitRate() float64 {
	if wl.reads == 0 {
		return math.NaN()
	}
	return float64(wl.hits) / float64(wl.reads)
}
