package apiserver

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strconv"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/mcribapi"
)

// slotMapWriteGrace is the time a blocked answer of GET /v1/slotmap gets on
// top of its ?wait= to be written.
const slotMapWriteGrace = 10 * time.Second

// slotMapIndex returns the mcribapi.IndexHeader of a slot map document: the
// 64-bit FNV-1a hash of its JSON encoding, never 0 (so that ?index=0
// always answers at once), written in decimal. It is a content
// index: equal documents have equal indexes, so every replica of a pool
// (they serve the same document) and a restarted process give the same
// index for the same map, and a client may move between them without a
// spurious answer or a missed change. It does not grow: clients compare it
// only for equality, and order maps by their generation.
func slotMapIndex(body []byte) uint64 {
	h := fnv.New64a()
	h.Write(body)
	return max(h.Sum64(), 1)
}

// getSlotMap answers GET /v1/slotmap: the slot map document with its
// X-Mcrib-Index and X-Mcrib-Map-Age (see writeSlotMap). With ?index= equal to the current index it blocks, as
// Consul's blocking queries do, until the document differs, ?wait= passes
// or the server shuts down, and then answers the current document (the
// same index when nothing changed). It waits on the loop's Changed
// notification, never polls.
func (a *Server) getSlotMap(w http.ResponseWriter, r *http.Request) error {
	q, err := mcribapi.ParseSlotMapQuery(r.URL.Query())
	if err != nil {
		return mcribapi.Errorf(http.StatusBadRequest, "%s", mcribapi.Sentence(err))
	}
	var timeout clock.Timer // started when the request first blocks
	for {
		changed := a.loop.Changed() // before the map, so no change is missed
		m := a.loop.SlotMap()
		if m == nil {
			return mcribapi.Errorf(http.StatusServiceUnavailable, "no slot map is known yet: Consul has not answered and none is stored")
		}
		body, err := json.Marshal(m)
		if err != nil {
			return err
		}
		index := slotMapIndex(body)
		if !q.Blocking || index != q.Index {
			a.writeSlotMap(w, body, index)
			return nil
		}
		if timeout == nil {
			timeout = clock.Or(a.clock).NewTimer(q.Wait)
			defer timeout.Stop()
			// The server's write timeout fits ordinary calls; a blocked
			// one gets its wait on top (net/http lifts the read deadline
			// itself while a handler runs). A socket deadline is wall
			// time, so it comes from the real clock.
			http.NewResponseController(w).SetWriteDeadline(time.Now().Add(q.Wait + slotMapWriteGrace))
		}
		select {
		case <-changed:
		case <-timeout.C():
			a.writeSlotMap(w, body, index)
			return nil
		case <-a.stopping:
			a.writeSlotMap(w, body, index)
			return nil
		case <-r.Context().Done():
			return nil // the caller is gone
		}
	}
}

// writeSlotMap writes a slot map answer with its index and its age: how
// long ago, by the server's clock, the loop last read the map from Consul
// (mcribapi.MapAgeHeader, whole milliseconds; never below 0). The age is
// left out while the loop has not read the map yet: a client then counts
// its map's age as unknown, and the map as not fresh (docs/api.md, "Fresh
// maps").
func (a *Server) writeSlotMap(w http.ResponseWriter, body []byte, index uint64) {
	w.Header().Set(mcribapi.IndexHeader, strconv.FormatUint(index, 10))
	if at := a.loop.SlotMapReadAt(); !at.IsZero() {
		age := max(clock.Or(a.clock).Now().Sub(at), 0)
		w.Header().Set(mcribapi.MapAgeHeader, strconv.FormatInt(age.Milliseconds(), 10))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
}
