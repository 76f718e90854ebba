package main

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mcrib/mcrib/clock"
)

// Bounds of ?wait= on GET /v1/slotmap (CONTRACT.md section 3), and the
// time a blocked answer gets on top of it to be written.
const (
	slotMapWaitDefault = 60 * time.Second
	slotMapWaitMax     = 5 * time.Minute
	slotMapWriteGrace  = 10 * time.Second
)

// slotMapIndex returns the X-Mcrib-Index of a slot map document: the
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

// slotMapQuery is the parsed query of GET /v1/slotmap.
type slotMapQuery struct {
	blocking bool   // ?index= was given
	index    uint64 // the index the caller has
	wait     time.Duration
}

// parseSlotMapQuery reads ?index= (a whole number, the X-Mcrib-Index of an
// earlier answer) and ?wait= (a duration above zero and at most 5m,
// default 60s). Its error is one sentence for a 400.
func parseSlotMapQuery(q url.Values) (slotMapQuery, error) {
	out := slotMapQuery{wait: slotMapWaitDefault}
	if s := q.Get("index"); q.Has("index") {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return out, errorf(http.StatusBadRequest, "index must be the X-Mcrib-Index of an earlier answer (a whole number), got %q", s)
		}
		out.blocking, out.index = true, n
	}
	if s := q.Get("wait"); q.Has("wait") {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return out, errorf(http.StatusBadRequest, "wait must be a duration above 0s (like 30s or 5m; longer than %s waits %s), got %q", slotMapWaitMax, slotMapWaitMax, s)
		}
		// As Consul's blocking queries do, a longer wait is capped.
		out.wait = min(d, slotMapWaitMax)
	}
	return out, nil
}

// getSlotMap answers GET /v1/slotmap: the slot map document with its
// X-Mcrib-Index. With ?index= equal to the current index it blocks, as
// Consul's blocking queries do, until the document differs, ?wait= passes
// or the server shuts down, and then answers the current document (the
// same index when nothing changed). It waits on the loop's Changed
// notification, never polls.
func (a *apiServer) getSlotMap(w http.ResponseWriter, r *http.Request) error {
	q, err := parseSlotMapQuery(r.URL.Query())
	if err != nil {
		return err
	}
	var timeout clock.Timer // started when the request first blocks
	for {
		changed := a.loop.Changed() // before the map, so no change is missed
		m := a.loop.SlotMap()
		if m == nil {
			return errorf(http.StatusServiceUnavailable, "no slot map is known yet: Consul has not answered and none is stored")
		}
		body, err := json.Marshal(m)
		if err != nil {
			return err
		}
		index := slotMapIndex(body)
		if !q.blocking || index != q.index {
			writeSlotMap(w, body, index)
			return nil
		}
		if timeout == nil {
			timeout = clock.Or(a.clock).NewTimer(q.wait)
			defer timeout.Stop()
			// The server's write timeout fits ordinary calls; a blocked
			// one gets its wait on top (net/http lifts the read deadline
			// itself while a handler runs). A socket deadline is wall
			// time, so it comes from the real clock.
			http.NewResponseController(w).SetWriteDeadline(time.Now().Add(q.wait + slotMapWriteGrace))
		}
		select {
		case <-changed:
		case <-timeout.C():
			writeSlotMap(w, body, index)
			return nil
		case <-a.stopping:
			writeSlotMap(w, body, index)
			return nil
		case <-r.Context().Done():
			return nil // the caller is gone
		}
	}
}

// writeSlotMap writes a slot map answer with its index.
func writeSlotMap(w http.ResponseWriter, body []byte, index uint64) {
	w.Header().Set("X-Mcrib-Index", strconv.FormatUint(index, 10))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
}
