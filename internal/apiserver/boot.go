package apiserver

import (
	"net/http"
	"time"

	"github.com/mcrib/mcrib/internal/bootgate"
)

// POST /v1/boot is answered by the boot gate (internal/bootgate): the
// leader admits from the pool's limit, a follower forwards to the leader
// and admits its share only while it cannot reach it (invariant 8). This
// file wires the gate to the API server.

// forwardedHeader marks a call one replica forwarded to another: boots
// (bootgate) and replaces (forward.go). On a replace its value is the
// forwarding replica's session, which the receiver checks against the
// live replicas' sessions before it believes X-Mcrib-Forwarded-For.
const forwardedHeader = bootgate.ForwardedHeader

// Replicas tells the API about the pool's live replicas; mcrib serve
// implements it over the loop and the elector.
type Replicas interface {
	// Count returns the live replicas, this one included (at least 1).
	Count() int
	// Has reports whether session is a live replica's session.
	Has(session string) bool
	// Session returns this replica's session, "" when it has none.
	Session() string
}

// alone is the replicas of a process that runs by itself.
type alone struct{}

func (alone) Count() int      { return 1 }
func (alone) Has(string) bool { return false }
func (alone) Session() string { return "" }

// newBootGate builds the boot gate from the server's fields as they are
// now: its limiter, leader, own ID (a.id), forward TLS and recorder. The
// live replica count and the leader are read at each boot.
func (a *Server) newBootGate() *bootgate.Gate {
	opts := bootgate.Options{
		Admitter: a.boot,
		Replicas: func() int { return a.replicas.Count() },
		Leader: func() (bool, string) {
			if a.leader == nil {
				return true, ""
			}
			leading, id := a.leader()
			// A leader admits from the pool's limit only while it is sure
			// no other process leads (leader.Assured); meanwhile it admits
			// its share, as a follower that cannot reach the leader does.
			return leading && (a.assured == nil || a.assured()), id
		},
		ID:        a.id,
		TLS:       a.forwardTLS,
		Transport: a.opts.ForwardTransport,
		Clock:     a.clock,
		Logger:    a.logger,
		Recorder:  a.rec,
	}
	if a.boot == nil {
		opts.Admitter = noBoots{}
	}
	g, err := bootgate.New(opts)
	if err != nil { // only a missing Admitter, supplied above
		panic(err)
	}
	return g
}

// postBoot answers POST /v1/boot through the boot gate.
func (a *Server) postBoot(w http.ResponseWriter, r *http.Request) error {
	a.gate.ServeHTTP(w, r)
	return nil
}

// noBoots is the admitter of a server built without a boot limiter (some
// tests): it refuses every boot.
type noBoots struct{}

func (noBoots) Admit() (bool, time.Duration)         { return false, time.Second }
func (noBoots) AdmitShare(int) (bool, time.Duration) { return false, time.Second }
