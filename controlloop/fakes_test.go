package controlloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// signal wakes the tests that wait for a fake to change. The zero value is
// ready to use; the fake's mutex guards it.
type signal struct{ ch chan struct{} }

// chanLocked returns the channel the next notifyLocked closes.
func (s *signal) chanLocked() chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) notifyLocked() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// waitUntil waits until cond (called with mu held) holds, up to 30 s: a
// deadline for goroutines to run, not a timing the test asserts (a loaded
// two-core machine running make test's packages side by side can hold a
// goroutine back for seconds).
func waitUntil(t *testing.T, mu *sync.Mutex, sig *signal, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		mu.Lock()
		ok, ch := cond(), sig.chanLocked()
		mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// fakeStore is a Store in memory. A counter stands for Consul's index;
// holder is the lease that holds the leader lock (zero: nobody).
type fakeStore struct {
	mu          sync.Mutex
	changed     signal
	index       uint64
	slotMap     *cachenodes.SlotMap
	slotIndex   uint64
	freeze      *mcribapi.FreezeDoc
	freezeIndex uint64
	holder      leader.Lease
	leaderID    string

	// failReads makes that many reads fail.
	failReads int
	// loseAnswers makes that many writes carried out answer an error, as
	// a write whose answer was lost on the way back.
	loseAnswers int
	// beforeWrite runs, with mu held, before a write checks anything: the
	// world changing between a pass's read and its write.
	beforeWrite func(s *fakeStore)

	reads, writes int
	// votes are the published votes, by replica.
	votes map[string]Vote
	// replacements are the replacement times stored with the map.
	replacements []time.Time
	// drainRaw is the stored drain document (nil: none), at drainIndex.
	drainRaw   []byte
	drainIndex uint64
	// drainWrites counts the writes of the drain document.
	drainWrites int
	// flushesRaw is the stored flushes document (nil: none), at
	// flushesIndex; flushesWrites counts its writes.
	flushesRaw    []byte
	flushesIndex  uint64
	flushesWrites int
	// goneVotes are the vote keys no session holds, by replica, at their
	// version; voteDeletes counts the deletions.
	goneVotes   map[string]uint64
	voteDeletes int
	// resizeRaw is the stored resize document (nil: none), at
	// resizeIndex.
	resizeRaw   []byte
	resizeIndex uint64
	// rollRaw is the stored roll document (nil: none), at rollIndex.
	rollRaw   []byte
	rollIndex uint64
}

var (
	_ ResizeStore = (*fakeStore)(nil)
	_ RollStore   = (*fakeStore)(nil)
)

func (s *fakeStore) KeepsResize() bool { return true }

func (s *fakeStore) KeepsRoll() bool { return true }

// storedRoll returns the stored roll entry (nil: none).
func (s *fakeStore) storedRoll(t testing.TB) *mcribapi.RollEntry {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rollRaw == nil {
		return nil
	}
	d, err := mcribapi.ParseStoredRoll(s.rollRaw)
	if err != nil {
		t.Fatalf("the stored roll document: %v", err)
	}
	return d.Roll
}

// storedResize returns the stored resize entry (nil: none).
func (s *fakeStore) storedResize(t testing.TB) *mcribapi.ResizeEntry {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resizeRaw == nil {
		return nil
	}
	d, err := mcribapi.ParseStoredResize(s.resizeRaw)
	if err != nil {
		t.Fatalf("the stored resize document: %v", err)
	}
	return d.Resize
}

var _ DrainStore = (*fakeStore)(nil)

func (s *fakeStore) PutDrain(ctx context.Context, doc mcribapi.DrainDoc, index uint64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed.notifyLocked()
	if index != s.drainIndex {
		return false, nil
	}
	s.putDrainLocked(&doc)
	return true, nil
}

func (s *fakeStore) putDrainLocked(doc *mcribapi.DrainDoc) {
	s.drainWrites++
	if len(doc.Zones) == 0 {
		s.drainRaw, s.drainIndex = nil, 0
		return
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	s.index++
	s.drainRaw, s.drainIndex = b, s.index
}

// storedDrainDoc returns the stored drain document (nil: none).
func (s *fakeStore) storedDrainDoc(t testing.TB) *mcribapi.DrainDoc {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drainRaw == nil {
		return nil
	}
	d, err := parseStoredDrain(s.drainRaw)
	if err != nil {
		t.Fatalf("the stored drain document: %v", err)
	}
	return d
}

func (s *fakeStore) PutVote(ctx context.Context, replica string, v Vote, member leader.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.votes == nil {
		s.votes = make(map[string]Vote)
	}
	v.Session = member.Session()
	s.votes[replica] = v
	return nil
}

var _ Store = (*fakeStore)(nil)

func (s *fakeStore) Read(ctx context.Context) (Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed.notifyLocked()
	s.reads++
	if s.failReads > 0 {
		s.failReads--
		return Snapshot{}, fmt.Errorf("reading the fake store: unreachable")
	}
	st := Snapshot{SlotMap: s.slotMap, SlotMapIndex: s.slotIndex, Freeze: s.freeze, FreezeIndex: s.freezeIndex, LeaderID: s.leaderID, Votes: maps.Clone(s.votes), Replacements: slices.Clone(s.replacements),
		GoneVotes: maps.Clone(s.goneVotes)}
	if s.flushesRaw != nil {
		st.FlushesIndex = s.flushesIndex
		f, err := parseStoredFlushes(s.flushesRaw)
		if err != nil {
			st.Corrupt, st.FlushesErr, st.Flushes = append(st.Corrupt, "flushes"), err, salvageFlushes(s.flushesRaw, s.slotMap)
		} else {
			st.Flushes = f
		}
	}
	if s.resizeRaw != nil {
		st.ResizeIndex = s.resizeIndex
		d, err := mcribapi.ParseStoredResize(s.resizeRaw)
		if err != nil {
			st.Corrupt, st.ResizeErr = append(st.Corrupt, "resize"), err
		} else {
			st.Resize = d
		}
	}
	if s.rollRaw != nil {
		st.RollIndex = s.rollIndex
		d, err := mcribapi.ParseStoredRoll(s.rollRaw)
		if err != nil {
			st.Corrupt, st.RollErr = append(st.Corrupt, "roll"), err
		} else {
			st.Roll = d
		}
	}
	if s.drainRaw != nil {
		st.DrainIndex = s.drainIndex
		d, err := parseStoredDrain(s.drainRaw)
		if err != nil {
			st.Corrupt, st.DrainErr = append(st.Corrupt, "drain"), err
		} else {
			st.Drain = d
		}
	}
	return st, nil
}

func (s *fakeStore) WritePool(ctx context.Context, read Snapshot, lease leader.Lease, w PoolWrite) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed.notifyLocked()
	if s.beforeWrite != nil {
		s.beforeWrite(s)
	}
	freezeAsRead := (read.Freeze == nil && s.freeze == nil) || (read.Freeze != nil && s.freeze != nil && read.FreezeIndex == s.freezeIndex)
	if read.SlotMapIndex != s.slotIndex || !freezeAsRead || (!lease.IsZero() && lease != s.holder) ||
		read.DrainIndex != s.drainIndex || read.FlushesIndex != s.flushesIndex || read.ResizeIndex != s.resizeIndex || read.RollIndex != s.rollIndex {
		return false, nil
	}
	if w.Roll != nil {
		if w.Roll.Roll == nil {
			s.rollRaw, s.rollIndex = nil, 0
		} else {
			b, err := json.Marshal(w.Roll)
			if err != nil {
				panic(err)
			}
			s.index++
			s.rollRaw, s.rollIndex = b, s.index
		}
	}
	if w.Resize != nil {
		if w.Resize.Resize == nil {
			s.resizeRaw, s.resizeIndex = nil, 0
		} else {
			b, err := json.Marshal(w.Resize)
			if err != nil {
				panic(err)
			}
			s.index++
			s.resizeRaw, s.resizeIndex = b, s.index
		}
	}
	if w.SlotMap != nil {
		s.putLocked(w.SlotMap)
		s.replacements = slices.Clone(w.Replacements)
		s.writes++
	}
	if w.Flushes != nil {
		s.putFlushesLocked(w.Flushes)
	}
	if w.Drain != nil {
		s.putDrainLocked(w.Drain)
	}
	if s.loseAnswers > 0 {
		s.loseAnswers--
		return false, &url.Error{Op: "Put", URL: "http://consul/v1/txn", Err: errors.New("i/o timeout: the answer to a write carried out was lost")}
	}
	return true, nil
}

// putFlushesLocked stores doc as a new version (removed when empty).
func (s *fakeStore) putFlushesLocked(doc *FlushesDoc) {
	s.flushesWrites++
	if len(doc.Flushes) == 0 {
		s.flushesRaw, s.flushesIndex = nil, 0
		return
	}
	b, err := encodeFlushes(doc)
	if err != nil {
		panic(err)
	}
	s.index++
	s.flushesRaw, s.flushesIndex = b, s.index
}

// storedFlushes returns the stored flushes document's entries (nil: none).
func (s *fakeStore) storedFlushes(t testing.TB) []OwedFlush {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flushesRaw == nil {
		return nil
	}
	f, err := parseStoredFlushes(s.flushesRaw)
	if err != nil {
		t.Fatalf("the stored flushes document: %v", err)
	}
	return f
}

func (s *fakeStore) DeleteVote(ctx context.Context, replica string, index uint64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.goneVotes[replica]; !ok || at != index {
		return false, nil
	}
	delete(s.goneVotes, replica)
	s.voteDeletes++
	return true, nil
}

func (s *fakeStore) PutFreeze(ctx context.Context, f mcribapi.FreezeDoc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index++
	s.freeze, s.freezeIndex = &f, s.index
	return nil
}

func (s *fakeStore) DeleteFreeze(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeze, s.freezeIndex = nil, 0
	return nil
}

// putLocked stores m as a new version.
func (s *fakeStore) putLocked(m *cachenodes.SlotMap) {
	s.index++
	s.slotMap, s.slotIndex = m, s.index
}

// lose forgets every key, as a restarted dev agent of Consul does; the
// lock is taken again at once by its holder.
func (s *fakeStore) lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slotMap, s.slotIndex, s.freeze, s.freezeIndex = nil, 0, nil, 0
}

// stored returns the stored map and the number of writes.
func (s *fakeStore) stored() (*cachenodes.SlotMap, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slotMap, s.writes
}

// fakeLeader is a Leadership whose lock lives in a fakeStore.
type fakeLeader struct {
	store *fakeStore

	mu        sync.Mutex
	lease     leader.Lease // zero while not leading
	member    leader.Lease // the replica's session; zero: publishes no vote
	stepDowns int
}

var _ Leadership = (*fakeLeader)(nil)

func (f *fakeLeader) Lease() (leader.Lease, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lease, !f.lease.IsZero()
}

func (f *fakeLeader) Confirm(ctx context.Context) (leader.Lease, error) {
	lease, ok := f.Lease()
	if !ok {
		return leader.Lease{}, leader.ErrNotLeader
	}
	f.store.mu.Lock()
	held := f.store.holder == lease
	f.store.mu.Unlock()
	if held {
		return lease, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lease = leader.Lease{}
	f.stepDowns++
	return leader.Lease{}, fmt.Errorf("%w: lost the fake lock", leader.ErrNotLeader)
}

func (f *fakeLeader) LeaderID() string { return "" }

func (f *fakeLeader) Member() (leader.Lease, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.member, !f.member.IsZero()
}

// win takes the lock in the store for a new session and leads.
func (f *fakeLeader) win(session string) {
	lease := leader.NewLease("mcrib/p/leader", session)
	f.store.mu.Lock()
	f.store.holder, f.store.leaderID = lease, "me"
	f.store.mu.Unlock()
	f.mu.Lock()
	f.lease = lease
	f.mu.Unlock()
}

// lose hands the lock to another process without telling f.
func (f *fakeLeader) loseLock() {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	f.store.holder, f.store.leaderID = leader.NewLease("mcrib/p/leader", "other"), "other"
}

func (f *fakeLeader) counts() (leading bool, stepDowns int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.lease.IsZero(), f.stepDowns
}

// fakeProber answers for every address with a memcached that has run for
// an hour, but for the addresses marked down, and counts the flushes it
// did. A flush raises the address's cmd_flush, as memcached does.
type fakeProber struct {
	mu      sync.Mutex
	changed signal
	stats   map[string]cachenodes.Stats
	down    map[string]bool
	flushes map[string]int
	reads   map[string]int // stats calls per address
	// clk, when set, makes each memcached's uptime grow with it, from
	// born (default: an hour before assignNow), as a real one's does.
	clk  *clock.Fake
	born map[string]time.Time
}

var _ Prober = (*fakeProber)(nil)

func (p *fakeProber) Stats(ctx context.Context, addr string) (cachenodes.Stats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reads == nil {
		p.reads = map[string]int{}
	}
	p.reads[addr]++
	p.changed.notifyLocked()
	if p.down[addr] {
		return cachenodes.Stats{}, fmt.Errorf("dialing %s: connection refused", addr)
	}
	return p.statsLocked(addr), nil
}

func (p *fakeProber) Flush(ctx context.Context, addr string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down[addr] {
		return fmt.Errorf("dialing %s: connection refused", addr)
	}
	if p.flushes == nil {
		p.flushes = map[string]int{}
	}
	p.flushes[addr]++
	p.flushedLocked(addr)
	return nil
}

func (p *fakeProber) statsLocked(addr string) cachenodes.Stats {
	st, ok := p.stats[addr]
	if !ok {
		st = cachenodes.Stats{PID: 1, Uptime: time.Hour}
	}
	if p.clk != nil {
		born, ok := p.born[addr]
		if !ok {
			born = assignNow.Add(-time.Hour)
		}
		st.Uptime = p.clk.Now().Sub(born).Truncate(time.Second)
	}
	return st
}

// flushedLocked raises cmd_flush of addr.
func (p *fakeProber) flushedLocked(addr string) {
	if p.stats == nil {
		p.stats = map[string]cachenodes.Stats{}
	}
	st := p.statsLocked(addr)
	st.CmdFlush++
	p.stats[addr] = st
}

// setDown marks addr unreachable or reachable again.
func (p *fakeProber) setDown(addr string, down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down == nil {
		p.down = map[string]bool{}
	}
	p.down[addr] = down
}

// flushedElsewhere records a flush of addr by another process.
func (p *fakeProber) flushedElsewhere(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushedLocked(addr)
}

// setCounters sets the hit counters addr reports.
func (p *fakeProber) setCounters(addr string, hits, misses uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stats == nil {
		p.stats = map[string]cachenodes.Stats{}
	}
	st := p.statsLocked(addr)
	st.GetHits, st.GetMisses = hits, misses
	p.stats[addr] = st
}

// flushCounts returns a copy of the flush counts.
func (p *fakeProber) flushCounts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.flushes)
}

// readCounts returns a copy of the stats calls per address.
func (p *fakeProber) readCounts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.reads)
}

// fakeDiscovery hands Run's callbacks the answers sent on answers, and
// sends on taken once each was handed over.
type fakeDiscovery struct {
	answers chan cachenodes.Membership
	taken   chan struct{}
}

func (d *fakeDiscovery) Run(ctx context.Context, onAnswer func(cachenodes.Membership), onError func(error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-d.answers:
			onAnswer(m)
			d.taken <- struct{}{}
		}
	}
}

// fakeMetrics records the loop's events.
type fakeMetrics struct {
	mu           sync.Mutex
	changed      signal
	passes       []mcribapi.Outcome
	replacements []mcribapi.EvictionReason
	flushes      []string
	moves        []mcribapi.MoveKind
}

func (m *fakeMetrics) Pass(result mcribapi.Outcome, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.passes = append(m.passes, result)
	m.changed.notifyLocked()
}

func (m *fakeMetrics) Replacement(reason mcribapi.EvictionReason) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replacements = append(m.replacements, reason)
}

func (m *fakeMetrics) Flush(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flushes = append(m.flushes, reason)
}

func (m *fakeMetrics) ConfigWrite(string, time.Time, error) {}

func (m *fakeMetrics) SlotMove(kind mcribapi.MoveKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.moves = append(m.moves, kind)
}
