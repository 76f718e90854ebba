package dst

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"time"
)

// trace is the run's record: every line goes into a running hash (two runs
// of a seed must agree on it byte for byte) and the last few into a ring,
// which a failure prints.
type trace struct {
	h     hash.Hash
	ring  []string
	next  int
	full  bool
	lines int
	// verbose, when set, receives every line as it is written.
	verbose func(string)
}

func newTrace(keep int, verbose func(string)) *trace {
	return &trace{h: sha256.New(), ring: make([]string, keep), verbose: verbose}
}

// add records one line at simulated time at.
func (t *trace) add(at time.Duration, format string, args ...any) {
	line := fmt.Sprintf("%10.3fs ", at.Seconds()) + fmt.Sprintf(format, args...)
	t.h.Write([]byte(line))
	t.h.Write([]byte{'\n'})
	t.lines++
	if len(t.ring) > 0 {
		t.ring[t.next] = line
		t.next = (t.next + 1) % len(t.ring)
		if t.next == 0 {
			t.full = true
		}
	}
	if t.verbose != nil {
		t.verbose(line)
	}
}

// last returns the lines kept, oldest first.
func (t *trace) last() []string {
	if !t.full {
		return append([]string(nil), t.ring[:t.next]...)
	}
	return append(append([]string(nil), t.ring[t.next:]...), t.ring[:t.next]...)
}

// sum returns the hash of every line so far, in hex.
func (t *trace) sum() string { return hex.EncodeToString(t.h.Sum(nil)) }
