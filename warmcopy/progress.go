package warmcopy

import "sync/atomic"

// SkipReason is why a key of the slot was not copied.
type SkipReason int

// The reasons a key of the slot is not copied. A key skipped is not
// written to B.
const (
	// SkipExpiring: it expires at the source within MinRemaining.
	SkipExpiring SkipReason = iota
	// SkipOverCap: more keys of the slot were listed than Options.MaxKeys,
	// and it was among the least recently used.
	SkipOverCap
	// SkipBadKey: its key cannot be sent in a text-protocol command (a
	// key stored through the binary protocol).
	SkipBadKey
	// SkipGone: the source no longer had it (deleted, evicted or expired
	// since the dump).
	SkipGone
	// SkipChanged: its CAS unique at the gets was not the dump's: written
	// since, so the dump's expiry may not be its own (the writer's set
	// reached B as well).
	SkipChanged
	// SkipTooLarge: its value is over Options.MaxValueBytes.
	SkipTooLarge
	// SkipLate: its add could not be sent within cachenodes.FillWithin
	// of its gets.
	SkipLate
	// SkipNotLeader: the leader lock was not confirmed within LockFresh
	// when its add was due.
	SkipNotLeader
	// SkipPresent: B refused the add (NOT_STORED): B had a value or a
	// tombstone, which the copy never replaces.
	SkipPresent
	// SkipRefused: B answered SERVER_ERROR to the add (a value over its
	// item size limit, out of memory).
	SkipRefused

	// NumSkipReasons is the number of reasons, the length of Skips.
	NumSkipReasons = iota
)

var skipNames = [NumSkipReasons]string{"expiring", "over_cap", "bad_key", "gone", "changed", "too_large", "late", "not_leader", "present", "refused"}

// String returns the reason's name as a metric label would carry it:
// expiring, over_cap, bad_key, gone, changed, too_large, late,
// not_leader, present or refused.
func (r SkipReason) String() string {
	if r < 0 || int(r) >= NumSkipReasons {
		return "unknown"
	}
	return skipNames[r]
}

// Skips counts the keys skipped, indexed by SkipReason.
type Skips [NumSkipReasons]int64

// Total returns the keys skipped for any reason.
func (s Skips) Total() int64 {
	var n int64
	for _, v := range s {
		n += v
	}
	return n
}

// Stats is what one copy did so far (Progress.Stats), or every copy of a
// Copier (Copier.Totals).
type Stats struct {
	// Dumped is how many items the source's metadump listed, of any slot.
	Dumped int64
	// Listed is how many keys of the slot the copy took up to copy, in
	// order (Dumped less other slots' keys, less those skipped at once:
	// expiring, bad keys and over the cap).
	Listed int64
	// CopiedKeys is how many keys are copied: added to B and found
	// unchanged at A afterwards.
	CopiedKeys int64
	// CopiedBytes is the value bytes of those keys.
	CopiedBytes int64
	// Undone is how many copies were added to B and then undone with a
	// tombstone: the second gets found the key gone or changed at A, or
	// could not tell.
	Undone int64
	// Skipped is how many keys of the slot were not copied, by reason.
	Skipped Skips
	// SourceGets is how many keys the copy asked the source for (both
	// gets of each key), and SourceHits how many it found: the copy's
	// share of the source's cmd_get and get_hits.
	SourceGets, SourceHits int64
	// SlowGets is how many of the copy's gets commands the source
	// answered slower than SlowAnswer.
	SlowGets int64
	// Halved reports whether the copy runs at half its rate now, the
	// source's last answer to a gets having been slow. Always false in
	// Copier.Totals.
	Halved bool
	// LockWaits is how many times the copy paused because the leader
	// lock had not been confirmed within LockFresh.
	LockWaits int64
}

// Progress is the running count of one Copy, readable while it runs. The
// zero value is ready to use; it is safe for concurrent use. A Progress
// should serve one Copy at a time.
type Progress struct {
	c      counters
	halved atomic.Bool
}

// Stats returns what the copy did so far.
func (p *Progress) Stats() Stats {
	s := p.c.stats()
	s.Halved = p.halved.Load()
	return s
}

// counter names one of the counts behind a Stats; the skip reasons
// follow the others.
type counter int

const (
	cDumped counter = iota
	cListed
	cCopiedKeys
	cCopiedBytes
	cUndone
	cSourceGets
	cSourceHits
	cSlowGets
	cLockWaits
	cSkipped    // + SkipReason
	numCounters = int(cSkipped) + NumSkipReasons
)

// counters are the atomic counts behind a Stats.
type counters [numCounters]atomic.Int64

func (c *counters) stats() Stats {
	s := Stats{
		Dumped: c[cDumped].Load(), Listed: c[cListed].Load(),
		CopiedKeys: c[cCopiedKeys].Load(), CopiedBytes: c[cCopiedBytes].Load(), Undone: c[cUndone].Load(),
		SourceGets: c[cSourceGets].Load(), SourceHits: c[cSourceHits].Load(), SlowGets: c[cSlowGets].Load(),
		LockWaits: c[cLockWaits].Load(),
	}
	for r := range s.Skipped {
		s.Skipped[r] = c[int(cSkipped)+r].Load()
	}
	return s
}

// tally counts into a run's Progress and its Copier's totals at once.
type tally struct{ run, all *counters }

func (t tally) add(c counter, n int64) {
	if n != 0 {
		t.run[c].Add(n)
		t.all[c].Add(n)
	}
}

func (t tally) skip(r SkipReason, n int64) { t.add(cSkipped+counter(r), n) }
