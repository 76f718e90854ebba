package controlloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// The flushes document (invariant 2, stored at <prefix>/<pool>/flushes):
// the flushes the pool owes, one entry per slot holder that must be
// flushed before it serves again. Only the leader writes it, in the same
// transaction as the slot map; every replica reads it, and followers show
// it as flush_pending. owedflush.go decides and settles the entries.

// OwedFlush is one entry of the flushes document: a node that was
// unreachable, by the pool's verdict, for longer than
// --flush-after-unreachable while it held a slot, and may have missed
// deletes.
type OwedFlush struct {
	// NodeID and Addr name the node, as the slot map had it.
	NodeID string `json:"node_id"`
	Addr   string `json:"addr"`
	// CmdFlush and PID are the node's cmd_flush count and memcached pid
	// of the last stats read before the episode: a higher count means it
	// was flushed since, another pid that it restarted (empty). A PID of 0
	// means no reading was known to the leader that decided: only a flush
	// (or the node leaving its slot) ends such an entry.
	CmdFlush uint64 `json:"cmd_flush"`
	PID      int64  `json:"pid"`
	// CmdFlushUnknown is set when that reading may not count a flush the
	// pool made of the node after it (it came before the node's placement,
	// or while another flush of it was owed): a higher count is then no
	// sign of this flush, so the leader reads the count again once the node
	// answers, before it flushes it (owedflush.go).
	CmdFlushUnknown bool `json:"cmd_flush_unknown,omitempty"`
	// StartedAt is when that memcached started (the reading's time less
	// its uptime), by the deciding leader's clock; zero when unknown. It
	// is not compared with another host's clock: a restart is told by the
	// pid, or by this process's own readings before and after (owedflush.go).
	StartedAt time.Time `json:"started_at,omitzero"`
	// Since is when the episode began, by the deciding leader's clock.
	Since time.Time `json:"since"`
	// Reason says, in one sentence, why the flush is owed.
	Reason string `json:"reason"`
}

// FlushesDoc is the flushes document: {"flushes": [...]}, one entry per
// node, by node ID.
type FlushesDoc struct {
	Flushes []OwedFlush `json:"flushes"`
}

// flushesDoc returns entries as a document, sorted by node ID (never nil).
func flushesDoc(entries []OwedFlush) *FlushesDoc {
	out := slices.Clone(entries)
	if out == nil {
		out = []OwedFlush{}
	}
	slices.SortFunc(out, func(a, b OwedFlush) int { return strings.Compare(a.NodeID, b.NodeID) })
	return &FlushesDoc{Flushes: out}
}

// encodeFlushes returns the stored form of doc.
func encodeFlushes(doc *FlushesDoc) ([]byte, error) {
	b, err := json.Marshal(flushesDoc(doc.Flushes))
	if err != nil {
		return nil, fmt.Errorf("encoding the flushes document: %w", err)
	}
	return b, nil
}

// parseStoredFlushes reads a stored flushes document: {"flushes": [...]}
// whose entries each name a node, at most once. Anything else is corrupt.
func parseStoredFlushes(b []byte) ([]OwedFlush, error) {
	var doc struct {
		Flushes *[]OwedFlush `json:"flushes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.Flushes == nil {
		return nil, errors.New(`the flushes document has no "flushes" array`)
	}
	seen := make(map[string]bool, len(*doc.Flushes))
	for i, e := range *doc.Flushes {
		switch {
		case e.NodeID == "":
			return nil, fmt.Errorf("flushes entry %d names no node", i)
		case seen[e.NodeID]:
			return nil, fmt.Errorf("node %q has two flushes entries", e.NodeID)
		}
		seen[e.NodeID] = true
	}
	if len(*doc.Flushes) == 0 {
		return nil, nil
	}
	return *doc.Flushes, nil
}

// salvageFlushes reads a corrupt flushes document the safe way: every slot
// holder of m whose ID the text names (as a JSON string) owes a flush,
// with an unknown base (so only a flush, or the node leaving its slot,
// ends it). A document with no readable name salvages nothing; the loop
// adds the entries of the last good document it read (owedflush.go).
func salvageFlushes(raw []byte, m *cachenodes.SlotMap) []OwedFlush {
	if m == nil {
		return nil
	}
	var out []OwedFlush
	for i := range m.NumSlots() {
		n := m.Slot(i)
		if n.IsZero() {
			continue
		}
		name, err := json.Marshal(n.ID)
		if err != nil || !bytes.Contains(raw, name) {
			continue
		}
		out = append(out, OwedFlush{NodeID: n.ID, Addr: n.Addr,
			Reason: "named in a flushes document in Consul KV that does not parse: taken as owing a flush"})
	}
	return out
}

// sameFlushes reports whether a and b hold the same entries, in any order.
func sameFlushes(a, b []OwedFlush) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = flushesDoc(a).Flushes, flushesDoc(b).Flushes
	for i := range a {
		x, y := a[i], b[i]
		if x.NodeID != y.NodeID || x.Addr != y.Addr || x.CmdFlush != y.CmdFlush || x.CmdFlushUnknown != y.CmdFlushUnknown || x.PID != y.PID ||
			!x.StartedAt.Equal(y.StartedAt) || !x.Since.Equal(y.Since) || x.Reason != y.Reason {
			return false
		}
	}
	return true
}

// owedIndex returns the index of node id's entry in entries, -1 if none.
func owedIndex(entries []OwedFlush, id string) int {
	return slices.IndexFunc(entries, func(e OwedFlush) bool { return e.NodeID == id })
}
