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
	// Any replica stores a drain (check-and-set in KV); the leader carries
	// it out, so nothing is forwarded.
	return changeCall[mcribapi.Drain]{
		parse: mcribapi.ParseDrainRequest,
		who:   a.caller,
		apply: func(ctx context.Context, req mcribapi.Drain, by string) (change, error) {
			z, err := a.zonesReady()
			if err != nil {
				return change{}, err
			}
			doc, err := z.Drain(ctx, zone, req, by)
			return change{doc, fmt.Sprintf("drain zone %s: %d%% of its slots, %d%% every %s: %s", zone, req.Percent, req.StepPercent, req.IntervalText(), req.Reason),
				[]any{"what", "drain", "zone", zone, "why", req.Reason,
					"percent", req.Percent, "step_percent", req.StepPercent, "step_interval", req.IntervalText()}}, err
		},
		failed: zoneError(zone, "the drain"),
	}.serve(a, w, r)
}

func (a *Server) deleteDrain(w http.ResponseWriter, r *http.Request) error {
	zone, err := zoneOf(r)
	if err != nil {
		return err
	}
	return changeCall[struct{}]{
		who: a.caller,
		apply: func(ctx context.Context, _ struct{}, _ string) (change, error) {
			z, err := a.zonesReady()
			if err != nil {
				return change{}, err
			}
			doc, err := z.Undrain(ctx, zone)
			return change{doc, "undrain zone " + zone + ": its slots come back at the drain's pace", []any{"what", "undrain", "zone", zone}}, err
		},
		failed: zoneError(zone, "the undrain"),
	}.serve(a, w, r)
}

// zoneError returns the failed of Drain or Undrain of zone (what: "the
// drain"): the refusals, an unknown zone and one not drained (404s), else
// a 503.
func zoneError(zone, what string) func(error) error {
	return func(err error) error {
		if answer, ok := refusal(err); ok {
			return answer
		}
		switch {
		case errors.Is(err, mcribapi.ErrUnknownZone):
			return mcribapi.Errorf(http.StatusNotFound, "no node is known in zone %q", zone)
		case errors.Is(err, mcribapi.ErrNotDrained):
			return mcribapi.Errorf(http.StatusNotFound, "zone %q is not drained", zone)
		}
		return unavailableAs(what + " could not be stored in Consul")(err)
	}
}

func (a *Server) postReplace(w http.ResponseWriter, r *http.Request) error {
	id, err := nodeOf(r)
	if err != nil {
		return err
	}
	return changeCall[string]{
		parse:     mcribapi.ParseReplaceRequest,
		who:       a.caller,
		forwarded: "the replace",
		apply: func(ctx context.Context, reason, by string) (change, error) {
			z, err := a.zonesReady()
			if err != nil {
				return change{}, err
			}
			res, err := z.Replace(ctx, id, reason, by)
			kind := mcribapi.MoveCold
			if res.Warm {
				kind = mcribapi.MoveWarm
			}
			return change{res, fmt.Sprintf("replace %s: slot %d to %s (%s): %s", id, res.Slot, res.To, kind, reason),
				[]any{"what", "replace", "node", id, "why", reason, "slot", res.Slot, "to", res.To, "warm", res.Warm}}, err
		},
		failed: func(err error) error {
			if errors.Is(err, mcribapi.ErrUnknownNode) {
				return mcribapi.Errorf(http.StatusNotFound, "no node %q is known in this pool", id)
			}
			return refusalsOr("the replace of " + id + " could not be carried out")(err)
		},
	}.serve(a, w, r)
}
