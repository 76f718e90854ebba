package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/mcribapi"
)

// The roll routes (docs/api.md, "Rolling restarts"): GET, PUT and DELETE
// /v1/roll. The leader carries out a start and a stop; a follower
// forwards them, as it does a resize.

// RollOps is the part of the control loop that rolls the pool's nodes;
// *controlloop.Loop implements it. The API finds it on its ControlPlane,
// so that a test's plane may leave it out.
type RollOps interface {
	StartRoll(ctx context.Context, req mcribapi.Roll, by string) (mcribapi.RollDoc, error)
	StopRoll(ctx context.Context, by string) (mcribapi.RollDoc, error)
	RollDoc() mcribapi.RollDoc
}

var _ RollOps = (*controlloop.Loop)(nil)

// rollReady returns the roll operations, or a 503 when this process has
// none.
func (a *Server) rollReady() (RollOps, error) {
	if a.rolls == nil {
		return nil, mcribapi.Errorf(http.StatusServiceUnavailable, "this process cannot roll the pool's nodes")
	}
	return a.rolls, nil
}

func (a *Server) getRoll(w http.ResponseWriter, r *http.Request) error {
	z, err := a.rollReady()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, z.RollDoc())
	return nil
}

func (a *Server) putRoll(w http.ResponseWriter, r *http.Request) error {
	return changeCall[mcribapi.Roll]{
		parse:     mcribapi.ParseRollRequest,
		who:       a.caller,
		forwarded: "the roll",
		apply: func(ctx context.Context, req mcribapi.Roll, by string) (change, error) {
			z, err := a.rollReady()
			if err != nil {
				return change{}, err
			}
			doc, err := z.StartRoll(ctx, req, by)
			return change{doc, fmt.Sprintf("roll %s, a restart awaited up to %s each: %s", req.What(), req.TimeoutText(), req.Reason),
				[]any{"what", "roll", "nodes", req.What(), "why", req.Reason, "restart_timeout", req.TimeoutText()}}, err
		},
		failed: refusalsOr("the roll could not be carried out", mcribapi.ErrUnknownNode, mcribapi.ErrUnknownZone, mcribapi.ErrNoRoll),
	}.serve(a, w, r)
}

func (a *Server) deleteRoll(w http.ResponseWriter, r *http.Request) error {
	return changeCall[struct{}]{
		who:       a.caller,
		forwarded: "the stop of the roll",
		apply: func(ctx context.Context, _ struct{}, by string) (change, error) {
			z, err := a.rollReady()
			if err != nil {
				return change{}, err
			}
			doc, err := z.StopRoll(ctx, by)
			return change{doc, "stop the roll: the nodes not yet released stay where they are", []any{"what", "roll stop"}}, err
		},
		failed: refusalsOr("the stop of the roll could not be carried out", mcribapi.ErrNoRoll),
	}.serve(a, w, r)
}
