package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/mcribapi"
)

// The resize routes (docs/api.md, "Growing the pool"): GET, PUT and DELETE
// /v1/resize. The leader carries out a start, a resume and a stop; a
// follower forwards them, as it does a replace.

// ResizeOps is the part of the control loop that grows the pool;
// *controlloop.Loop implements it. The API finds it on its ControlPlane,
// so that a test's plane may leave it out.
type ResizeOps interface {
	StartResize(ctx context.Context, req mcribapi.Resize, by string) (mcribapi.ResizeDoc, error)
	StopResize(ctx context.Context, by string) (mcribapi.ResizeDoc, error)
	ResizeDoc() mcribapi.ResizeDoc
}

var _ ResizeOps = (*controlloop.Loop)(nil)

// resizeReady returns the resize operations, or a 503 when this process
// has none.
func (a *Server) resizeReady() (ResizeOps, error) {
	if a.resizes == nil {
		return nil, mcribapi.Errorf(http.StatusServiceUnavailable, "this process cannot resize the pool")
	}
	return a.resizes, nil
}

func (a *Server) getResize(w http.ResponseWriter, r *http.Request) error {
	z, err := a.resizeReady()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, z.ResizeDoc())
	return nil
}

func (a *Server) putResize(w http.ResponseWriter, r *http.Request) error {
	return changeCall[mcribapi.Resize]{
		parse:     mcribapi.ParseResizeRequest,
		who:       a.caller,
		forwarded: "the resize",
		apply: func(ctx context.Context, req mcribapi.Resize, by string) (change, error) {
			z, err := a.resizeReady()
			if err != nil {
				return change{}, err
			}
			doc, err := z.StartResize(ctx, req, by)
			return change{doc, fmt.Sprintf("resize the pool to %d slots, %d%% of its twins split every %s: %s", req.NumSlots, req.StepPercent, req.IntervalText(), req.Reason),
				[]any{"what", "resize", "slots", req.NumSlots, "why", req.Reason, "step_percent", req.StepPercent, "step_interval", req.IntervalText()}}, err
		},
		failed: refusalsOr("the resize could not be carried out", mcribapi.ErrNoResize),
	}.serve(a, w, r)
}

func (a *Server) deleteResize(w http.ResponseWriter, r *http.Request) error {
	return changeCall[struct{}]{
		who:       a.caller,
		forwarded: "the stop of the resize",
		apply: func(ctx context.Context, _ struct{}, by string) (change, error) {
			z, err := a.resizeReady()
			if err != nil {
				return change{}, err
			}
			doc, err := z.StopResize(ctx, by)
			return change{doc, "stop the resize: no further split; twins stay twins", []any{"what", "resize stop"}}, err
		},
		failed: refusalsOr("the stop of the resize could not be carried out", mcribapi.ErrNoResize),
	}.serve(a, w, r)
}
