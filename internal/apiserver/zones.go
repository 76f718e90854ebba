package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/mcribapi"
)

// The zone routes (docs/api.md, "Zones, drains and warm moves"): GET
// /v1/drain, PUT and DELETE /v1/drain/{zone}, POST /v1/nodes/{id}/replace.

// ZoneOps is the part of the control loop that drains zones and replaces
// nodes; *controlloop.Loop implements it. The API finds it on its
// ControlPlane, so that a test's plane may leave it out.
type ZoneOps interface {
	Drain(ctx context.Context, zone string, req mcribapi.Drain, by string) (mcribapi.DrainDoc, error)
	Undrain(ctx context.Context, zone string) (mcribapi.DrainDoc, error)
	Drains() mcribapi.DrainDoc
	Replace(ctx context.Context, id, reason, by string) (mcribapi.ReplaceAnswer, error)
}

var _ ZoneOps = (*controlloop.Loop)(nil)

// zoneOf reads and checks the zone a path names.
func zoneOf(r *http.Request) (string, error) {
	zone := r.PathValue("zone")
	if zone == "" {
		return "", mcribapi.Errorf(http.StatusNotFound, "the path names no zone; use %s /v1/drain/{zone}", r.Method)
	}
	if err := mcribapi.CheckZone(zone); err != nil {
		return "", mcribapi.Errorf(http.StatusBadRequest, "%s", mcribapi.Sentence(err))
	}
	return zone, nil
}

// nodeOf reads and checks the node ID a path names.
func nodeOf(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if id == "" {
		return "", mcribapi.Errorf(http.StatusNotFound, "the path names no node; use POST /v1/nodes/{id}/replace")
	}
	if err := mcribapi.CheckNodeID(id); err != nil {
		return "", mcribapi.Errorf(http.StatusBadRequest, "%s", mcribapi.Sentence(err))
	}
	return id, nil
}

// zonesReady returns the zone operations, or a 503 when this process has
// none.
func (a *Server) zonesReady() (ZoneOps, error) {
	if a.zones == nil {
		return nil, mcribapi.Errorf(http.StatusServiceUnavailable, "this process cannot drain zones or replace nodes")
	}
	return a.zones, nil
}

func (a *Server) getDrains(w http.ResponseWriter, r *http.Request) error {
	z, err := a.zonesReady()
	if err != nil {
		return err
	}
	doc := z.Drains()
	if doc.Zones == nil {
		doc.Zones = map[string]*mcribapi.DrainEntry{}
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}

func (a *Server) putDrain(w http.ResponseWriter, r *http.Request) error {
	zone, err := zoneOf(r)
	if err != nil {
		return err
	}
	_, req, err := readRequest(r, mcribapi.ParseDrainRequest)
	if err != nil {
		return err
	}
	z, err := a.zonesReady()
	if err != nil {
		return err
	}
	by := a.caller(r)
	// Any replica stores a drain (check-and-set in KV); the leader carries
	// it out, so nothing is forwarded.
	doc, err := z.Drain(r.Context(), zone, req, by)
	if err := zoneError(err, zone, "the drain"); err != nil {
		return err
	}
	what := fmt.Sprintf("drain zone %s: %d%% of its slots, %d%% every %s: %s", zone, req.Percent, req.StepPercent, req.IntervalText(), req.Reason)
	a.logger.Info("operator change", "who", by, "what", "drain", "zone", zone, "why", req.Reason,
		"percent", req.Percent, "step_percent", req.StepPercent, "step_interval", req.IntervalText())
	a.ops.operator(by, what)
	writeJSON(w, http.StatusOK, doc)
	return nil
}

func (a *Server) deleteDrain(w http.ResponseWriter, r *http.Request) error {
	zone, err := zoneOf(r)
	if err != nil {
		return err
	}
	if _, err := readBody(r); err != nil { // unused, but size-limited as every body
		return err
	}
	z, err := a.zonesReady()
	if err != nil {
		return err
	}
	doc, err := z.Undrain(r.Context(), zone)
	if err := zoneError(err, zone, "the undrain"); err != nil {
		return err
	}
	by := a.caller(r)
	a.logger.Info("operator change", "who", by, "what", "undrain", "zone", zone)
	a.ops.operator(by, "undrain zone "+zone+": its slots come back at the drain's pace")
	writeJSON(w, http.StatusOK, doc)
	return nil
}

// zoneError maps an error of Drain or Undrain to its answer; nil stays nil.
func zoneError(err error, zone, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mcribapi.ErrBadRequest), errors.Is(err, mcribapi.ErrRefused):
		return mcribapi.Errorf(mcribapi.StatusCode(err), "%s", mcribapi.Sentence(err))
	case errors.Is(err, mcribapi.ErrUnknownZone):
		return mcribapi.Errorf(http.StatusNotFound, "no node is known in zone %q", zone)
	case errors.Is(err, mcribapi.ErrNotDrained):
		return mcribapi.Errorf(http.StatusNotFound, "zone %q is not drained", zone)
	}
	return mcribapi.Errorf(http.StatusServiceUnavailable, "%s could not be stored in Consul: %v", what, err)
}

func (a *Server) postReplace(w http.ResponseWriter, r *http.Request) error {
	id, err := nodeOf(r)
	if err != nil {
		return err
	}
	body, reason, err := readRequest(r, mcribapi.ParseReplaceRequest)
	if err != nil {
		return err
	}
	z, err := a.zonesReady()
	if err != nil {
		return err
	}
	by := a.caller(r)
	res, err := z.Replace(r.Context(), id, reason, by)
	switch {
	case errors.Is(err, mcribapi.ErrNotLeader):
		return a.forwardToLeader(w, r, "the replace", body)
	case errors.Is(err, mcribapi.ErrUnknownNode):
		return mcribapi.Errorf(http.StatusNotFound, "no node %q is known in this pool", id)
	case errors.Is(err, mcribapi.ErrRefused), errors.Is(err, mcribapi.ErrBadRequest):
		return mcribapi.Errorf(mcribapi.StatusCode(err), "%s", mcribapi.Sentence(err))
	case err != nil:
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the replace of %s could not be carried out: %v", id, err)
	}
	kind := mcribapi.MoveCold
	if res.Warm {
		kind = mcribapi.MoveWarm
	}
	a.logger.Info("operator change", "who", by, "what", "replace", "node", id, "why", reason,
		"slot", res.Slot, "to", res.To, "warm", res.Warm)
	a.ops.operator(by, fmt.Sprintf("replace %s: slot %d to %s (%s): %s", id, res.Slot, res.To, kind, reason))
	writeJSON(w, http.StatusOK, res)
	return nil
}
