package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/mcclient"
)

// soakKeys is the size of the soak client's key space.
const soakKeys = 1500

// soakKey is what the soak client knows of one key: the version of its
// last acknowledged write, whether its last acknowledged operation was a
// delete, and the versions whose Set failed (they may still land late, as
// the kernel of a paused or cut node delivers what it buffered).
type soakKey struct {
	acked     int  // version of the last acknowledged Set; 0: none
	deleted   bool // the last acknowledged operation was a Delete
	uncertain map[int]bool
}

// soakClient writes, deletes and reads a key space through the shipped
// client (mcclient following the map), one operation at a time, and checks
// every read against what it wrote and deleted: a value read back after an
// acknowledged delete, or older than the last acknowledged write, is a
// violation.
type soakClient struct {
	c    *mcclient.Client
	rng  *rand.Rand
	keys []soakKey
	next int // the next version

	mu                  sync.Mutex
	gets, hits, misses  uint64
	sets, setErrs       uint64
	deletes, deleteErrs uint64
	noMap, late         uint64
	violations          []string
}

func newSoakClient(c *mcclient.Client, seed uint64) *soakClient {
	return &soakClient{c: c, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), keys: make([]soakKey, soakKeys)}
}

// run does operations until ctx ends, pausing a millisecond between them.
func (s *soakClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		s.step()
		time.Sleep(time.Millisecond)
	}
}

// step does one random operation: half gets, a third sets, the rest deletes.
func (s *soakClient) step() {
	i := s.rng.IntN(soakKeys)
	key := "soak-" + strconv.Itoa(i)
	k := &s.keys[i]
	switch r := s.rng.IntN(100); {
	case r < 50:
		it, err := s.c.Get(key)
		s.read(key, k, it, err)
	case r < 83:
		s.next++
		v := s.next
		err := s.c.Set(&memcache.Item{Key: key, Value: []byte(strconv.Itoa(v))})
		s.mu.Lock()
		s.sets++
		if err == nil {
			k.acked, k.deleted = v, false
		} else {
			s.setErrs++
			if errors.Is(err, mcclient.ErrNoSlotMap) {
				s.noMap++
			}
			if k.uncertain == nil {
				k.uncertain = map[int]bool{}
			}
			k.uncertain[v] = true
		}
		s.mu.Unlock()
	default:
		err := s.c.Delete(key)
		s.mu.Lock()
		s.deletes++
		// Queued for replay counts as done: the client promises it.
		if err == nil || errors.Is(err, memcache.ErrCacheMiss) || errors.Is(err, mcclient.ErrQueued) {
			k.deleted = true
		} else {
			s.deleteErrs++
		}
		s.mu.Unlock()
	}
}

// read judges one Get.
func (s *soakClient) read(key string, k *soakKey, it *memcache.Item, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if err != nil {
		s.misses++
		return
	}
	s.hits++
	v, perr := strconv.Atoi(string(it.Value))
	switch {
	case perr != nil:
		s.violate("key %s: read %q, a value never written", key, it.Value)
	case k.uncertain[v]:
		s.late++ // a failed Set that landed late: not mcrib's doing
	case k.deleted:
		s.violate("key %s: read version %d back after an acknowledged delete (last acknowledged write %d)", key, v, k.acked)
	case v < k.acked:
		s.violate("key %s: read version %d, older than the acknowledged write %d (a stale value)", key, v, k.acked)
	case v > k.acked:
		s.violate("key %s: read version %d, never acknowledged nor attempted on this key (last %d)", key, v, k.acked)
	}
}

// violate records a violation; s.mu is held.
func (s *soakClient) violate(format string, args ...any) {
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

// takeViolations returns the violations recorded since the last call.
func (s *soakClient) takeViolations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.violations
	s.violations = nil
	return out
}

// summary describes the client's operations and its hit rate.
func (s *soakClient) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	rate := 0.0
	if s.gets > 0 {
		rate = float64(s.hits) / float64(s.gets)
	}
	fmt.Fprintf(&b, "client: %d gets (%d hits, %d misses), hit rate %.3f; %d sets (%d failed, %d without a map, %d failed sets read back late); %d deletes (%d failed)",
		s.gets, s.hits, s.misses, rate, s.sets, s.setErrs, s.noMap, s.late, s.deletes, s.deleteErrs)
	return b.String()
}
