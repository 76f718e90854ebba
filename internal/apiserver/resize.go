package apiserver

import (
	"context"
	"errors"
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
	body, req, err := readRequest(r, mcribapi.ParseResizeRequest)
	if err != nil {
		return err
	}
	z, err := a.resizeReady()
	if err != nil {
		return err
	}
	by := a.caller(r)
	doc, err := z.StartResize(r.Context(), req, by)
	if errors.Is(err, mcribapi.ErrNotLeader) {
		return a.forwardToLeader(w, r, "the resize", body)
	}
	if err := resizeError(err, "the resize"); err != nil {
		return err
	}
	what := fmt.Sprintf("resize the pool to %d slots, %d%% of its twins split every %s: %s", req.NumSlots, req.StepPercent, req.IntervalText(), req.Reason)
	a.logger.Info("operator change", "who", by, "what", "resize", "slots", req.NumSlots, "why", req.Reason,
		"step_percent", req.StepPercent, "step_interval", req.IntervalText())
	a.ops.operator(by, what)
	writeJSON(w, http.StatusOK, doc)
	return nil
}

func (a *Server) deleteResize(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r) // unused, but size-limited as every body
	if err != nil {
		return err
	}
	z, err := a.resizeReady()
	if err != nil {
		return err
	}
	by := a.caller(r)
	doc, err := z.StopResize(r.Context(), by)
	if errors.Is(err, mcribapi.ErrNotLeader) {
		return a.forwardToLeader(w, r, "the stop of the resize", body)
	}
	if err := resizeError(err, "the stop of the resize"); err != nil {
		return err
	}
	a.logger.Info("operator change", "who", by, "what", "resize stop")
	a.ops.operator(by, "stop the resize: no further split; twins stay twins")
	writeJSON(w, http.StatusOK, doc)
	return nil
}

// resizeError maps an error of StartResize or StopResize (what: "the
// resize") to its answer; nil stays nil.
func resizeError(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mcribapi.ErrNoResize), errors.Is(err, mcribapi.ErrRefused), errors.Is(err, mcribapi.ErrBadRequest):
		return mcribapi.Errorf(mcribapi.StatusCode(err), "%s", mcribapi.Sentence(err))
	}
	return mcribapi.Errorf(http.StatusServiceUnavailable, "%s could not be carried out: %v", what, err)
}
