package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/sim"
)

// POST /v1/whatif (docs/api.md, "What-if"): what a drain or a resize
// would cost, the simulator's prediction for the pool as it is now (its
// status document and slot map, read as mcrib sim --like reads them). It
// changes nothing, so it needs no token: the browser rule and the body
// rules hold as for any POST (413, 415), then the action's own 400 and
// 404; what its endpoint would refuse with 409 answers 200 with that
// sentence in blocked. Any replica answers from its own view.

// WhatIfOps answers the refusals of a what-if's action without making it;
// *controlloop.Loop implements it.
type WhatIfOps interface {
	CheckDrain(ctx context.Context, zone string) error
	CheckResize(ctx context.Context, req mcribapi.Resize) error
}

var _ WhatIfOps = (*controlloop.Loop)(nil)

// predictor simulates an action on a pool's shape (sim.Predict).
type predictor func(ctx context.Context, shape sim.Shape, a sim.Action) (sim.Prediction, error)

// whatIfBudget bounds the simulation of one what-if, the wait for another
// included.
const whatIfBudget = 2 * time.Minute

// oneAtATime returns p run by one caller at a time (a simulation takes a
// core for seconds); a caller waits for its turn until its context ends.
func oneAtATime(p predictor) predictor {
	turn := make(chan struct{}, 1)
	return func(ctx context.Context, shape sim.Shape, a sim.Action) (sim.Prediction, error) {
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			return sim.Prediction{}, ctx.Err()
		}
		defer func() { <-turn }()
		return p(ctx, shape, a)
	}
}

func (a *Server) postWhatIf(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	req, err := mcribapi.ParseWhatIfRequest(body)
	if err != nil {
		return mcribapi.Errorf(http.StatusBadRequest, "%s", mcribapi.Sentence(err))
	}
	if a.whatifs == nil || a.predict == nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "this process cannot simulate the pool")
	}
	act := sim.Action{Kind: req.Action, Zone: req.Zone, Drain: req.Drain, Resize: req.Resize}
	if req.Action == mcribapi.WhatIfDrain {
		err = a.whatifs.CheckDrain(r.Context(), req.Zone)
	} else {
		err = a.whatifs.CheckResize(r.Context(), req.Resize)
	}
	st := a.status()
	switch {
	case errors.Is(err, mcribapi.ErrRefused):
		writeJSON(w, http.StatusOK, blockedPrediction(req.Action, st, mcribapi.Sentence(err)))
		return nil
	case err != nil:
		if answer, ok := refusal(err, mcribapi.ErrUnknownZone); ok {
			return answer
		}
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the what-if could not read the pool: %v", err)
	}
	shape, err := a.shape(st)
	if err != nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the what-if could not read the pool: %v", err)
	}
	// The simulation takes seconds: the answer may come after the
	// server's write timeout, up to whatIfBudget.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(whatIfBudget + 5*time.Second))
	ctx, cancel := context.WithTimeout(r.Context(), whatIfBudget)
	defer cancel()
	p, err := a.predict(ctx, shape, act)
	if errors.Is(err, context.DeadlineExceeded) {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the simulation took longer than %s; try again when fewer what-ifs run", whatIfBudget)
	}
	if err != nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the simulation could not run: %v", err)
	}
	writeJSON(w, http.StatusOK, mcribapi.Prediction{Action: req.Action, Duration: mcribapi.DurationText(p.Duration),
		LowestHitRate: p.LowestHitRate, ExtraMisses: p.ExtraMisses, LowestBootLimit: p.LowestBootLimit, Blocked: p.Blocked})
	return nil
}

// shape reads the pool's shape from its status document st and its slot
// map, as mcrib sim --like reads them from GET /v1/status and GET
// /v1/slotmap.
func (a *Server) shape(st mcribapi.Status) (sim.Shape, error) {
	m := a.loop.SlotMap()
	if m == nil {
		return sim.Shape{}, errors.New("the pool has no slot map yet")
	}
	sb, err := json.Marshal(st)
	if err != nil {
		return sim.Shape{}, fmt.Errorf("writing the status document: %w", err)
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return sim.Shape{}, fmt.Errorf("writing the slot map: %w", err)
	}
	return sim.ParseShape(sb, mb)
}

// blockedPrediction is the answer of a what-if whose action its endpoint
// would refuse now (why): nothing happens, so nothing changes.
func blockedPrediction(action string, st mcribapi.Status, why string) mcribapi.Prediction {
	p := mcribapi.Prediction{Action: action, Duration: mcribapi.DurationText(0), LowestBootLimit: st.BootLimit.Limit, Blocked: why}
	if st.HitRate != nil {
		p.LowestHitRate = *st.HitRate
	}
	return p
}
