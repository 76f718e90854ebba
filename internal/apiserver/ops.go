package apiserver

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// Ops is what GET /v1/events and GET /v1/history serve: the
// decisions of the control loop, the operator's changes and the boot
// limit's moves (Log), and the pool's figures over the last half hour
// (History). A nil *Ops serves an empty log and history.
type Ops struct {
	log  *eventlog.Log
	hist *eventlog.History

	mu       sync.Mutex
	lastBoot *ratelimit.Document
}

// NewOps returns a record over log and hist.
func NewOps(log *eventlog.Log, hist *eventlog.History) *Ops {
	return &Ops{log: log, hist: hist}
}

// Sink is the recorder the control loop feeds (controlloop.Options.Events).
func (o *Ops) Sink() eventlog.Recorder { return eventlog.Recorder{Log: o.log, History: o.hist} }

// Run samples boot and its hitRate into the history once per interval of
// the history until ctx ends (eventlog.History.Run).
func (o *Ops) Run(ctx context.Context, boot BootLimiter, hitRate func() (float64, bool)) {
	o.hist.Run(ctx, func() eventlog.Reading { return o.reading(boot, hitRate) })
}

// operator records an operator's change.
func (o *Ops) operator(who, what string) {
	if o != nil {
		o.log.Add(mcribapi.Event{Kind: mcribapi.EventOperator, Reason: what, Who: who})
	}
}

// BootAdmission counts one boot admission in the history.
func (o *Ops) BootAdmission(admitted bool) {
	if o != nil {
		o.hist.Admission(admitted)
	}
}

// reading samples the boot limiter for the history, and records a change
// of the boot limit's mode or value since the previous sample.
func (o *Ops) reading(boot BootLimiter, hitRate func() (float64, bool)) eventlog.Reading {
	doc := boot.Document()
	rate, known := hitRate()
	o.mu.Lock()
	prev := o.lastBoot
	o.lastBoot = &doc
	o.mu.Unlock()
	if prev != nil && (prev.Mode != doc.Mode || prev.Limit != doc.Limit) {
		o.log.Add(mcribapi.Event{Kind: mcribapi.EventBootLimit, Who: "mcrib",
			Reason: fmt.Sprintf("%s %s → %s %s boots/s: %s", prev.Mode, limitText(prev.Limit), doc.Mode, limitText(doc.Limit), cmp.Or(doc.Reason, "-"))})
	}
	return eventlog.Reading{HitRate: rate, HitRateKnown: known, BootLimit: doc.Limit, BootMode: doc.Mode}
}

// limitText formats a boot limit for a sentence: 250, 62.5, 0.25.
func limitText(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// teeBoot counts boot admissions in the metrics and in the history.
type teeBoot []BootRecorder

func (t teeBoot) BootAdmission(admitted bool) {
	for _, r := range t {
		r.BootAdmission(admitted)
	}
}

// getEvents serves GET /v1/events: the latest decisions, newest last;
// ?since=N keeps those after the event numbered N (its "seq"). A since
// beyond the last event can only come from a reader of an earlier process
// (the numbers start again at 1 after a restart): it gets every event, and
// tells the restart by numbers at or below its own.
func (a *Server) getEvents(w http.ResponseWriter, r *http.Request) error {
	since, err := mcribapi.ParseEventsSince(r.URL.Query())
	if err != nil {
		return mcribapi.Errorf(http.StatusBadRequest, "%s", mcribapi.Sentence(err))
	}
	events := []mcribapi.Event{}
	if a.ops != nil {
		if since > a.ops.log.Last() {
			since = 0
		}
		events = a.ops.log.Since(since)
	}
	writeJSON(w, http.StatusOK, events)
	return nil
}

// getHistory serves GET /v1/history: the pool's figures, one point per
// stats interval over the last 30 minutes.
func (a *Server) getHistory(w http.ResponseWriter, r *http.Request) error {
	if a.ops == nil {
		writeJSON(w, http.StatusOK, eventlog.NewHistory(eventlog.HistoryOptions{}).Series())
		return nil
	}
	writeJSON(w, http.StatusOK, a.ops.hist.Series())
	return nil
}
