package dst

import (
	"fmt"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// Announce, then serve (docs/api.md, "Announce, then serve"): every
// placement into a slot but the first fill of a new pool and the twins of
// a resize's first write is written first as the slot's incoming node,
// and served no sooner than AnnounceLead after that write (by the
// writer's clock, which the checker reads in the maps' updated_at and
// serves_at). The checker notes when the stored map first named each
// slot's incoming node (noteIncoming) and checks each new holder against
// it (announced).

// incomingTruth is what the checker saw of one slot's announce: the node,
// its serves_at as written, and when the stored map first showed it.
type incomingTruth struct {
	node     string
	servesAt time.Time
	at       time.Duration
}

// noteIncoming records the announces of m, the stored map's new version:
// an announce seen before keeps when it was first stored.
func (c *checker) noteIncoming(m *cachenodes.SlotMap) {
	next := map[int]incomingTruth{}
	for i := range m.NumSlots() {
		ni := m.Incoming(i)
		if ni == nil {
			continue
		}
		if was, ok := c.incoming[i]; ok && was.node == ni.NodeID && was.servesAt.Equal(ni.ServesAt) {
			next[i] = was
			continue
		}
		next[i] = incomingTruth{node: ni.NodeID, servesAt: ni.ServesAt, at: c.w.now}
	}
	c.incoming = next
}

// announced judges slot i's new holder to, in m, against the announces
// seen: it returns when the announce was first stored (now when there was
// none) and, when the move breaks the rule, why. The rule: the stored map
// named it the slot's incoming node at least AnnounceLead before (less
// the clocks' 2 × maxSkew, as the writers' clocks may differ that much
// from the simulated time), and m, by its writer's clock, is no earlier
// than the announce's serves_at. (checkChange tells a broken one after
// the other rules of the change, so that a rogue write breaking one of
// those is named by it.)
func (c *checker) announced(m *cachenodes.SlotMap, i int, to cachenodes.Node) (time.Duration, string) {
	w := c.w
	a, ok := c.incoming[i]
	switch {
	case !ok || a.node != to.ID:
		return w.now, fmt.Sprintf("%s entered slot %d (generation %d) unannounced: the stored map never named it the slot's incoming node", to.ID, i, m.Generation())
	case w.now-a.at < cachenodes.AnnounceLead-2*maxSkew:
		return a.at, fmt.Sprintf("%s entered slot %d %v after its announce was stored (at %.3fs), under the %v an announce takes less the clocks' %v",
			to.ID, i, w.now-a.at, a.at.Seconds(), cachenodes.AnnounceLead, 2*maxSkew)
	case m.UpdatedAt().Before(a.servesAt):
		return a.at, fmt.Sprintf("%s entered slot %d in a map its writer wrote at %s by its clock, before the announce's serves_at %s",
			to.ID, i, m.UpdatedAt().Format("15:04:05.000"), a.servesAt.Format("15:04:05.000"))
	}
	return a.at, ""
}
