package apiserver

import (
	"context"
	"errors"
	"net/http"

	"github.com/mcrib/mcrib/mcribapi"
)

// The operator changes (freeze, unfreeze, ratelimit, drain, undrain,
// replace, resize and its stop) share their shape: auth has checked the
// token and the body rules; then the request is parsed from the body, the
// change is made in the caller's name, a follower forwards what only the
// leader carries out, and the answer is the change's document, logged and
// recorded as an operator event. changeCall is that shape, written once;
// each handler says only what differs.

// changeCall is one operator change, T the request its body carries.
type changeCall[T any] struct {
	// parse reads the request from the body; its refusal is a 400 with
	// its one sentence. nil reads the body (size-limited as every body)
	// and passes T's zero value.
	parse func([]byte) (T, error)
	// who names the caller: Server.who, or Server.caller for a call a
	// replica may have forwarded here.
	who func(*http.Request) string
	// forwarded names the call when a follower forwards it to the leader
	// ("the replace"); "" is a call every replica carries out.
	forwarded string
	// apply makes the change and returns it. An error that is an answer
	// already (an *mcribapi.Error, such as the 503 of a process that cannot
	// drain) is written as it is; any other goes through failed.
	apply func(ctx context.Context, req T, by string) (change, error)
	// failed turns an error of apply into the answer.
	failed func(error) error
}

// change is what an operator change did: the answer's document, the
// operator event's words and the log line's attributes after "who".
type change struct {
	doc   any
	event string
	log   []any
}

// serve runs the change for r and writes its answer.
func (c changeCall[T]) serve(a *Server, w http.ResponseWriter, r *http.Request) error {
	var req T
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if c.parse != nil {
		if req, err = c.parse(body); err != nil {
			return mcribapi.Errorf(http.StatusBadRequest, "%s", mcribapi.Sentence(err))
		}
	}
	by := c.who(r)
	done, err := c.apply(r.Context(), req, by)
	switch {
	case c.forwarded != "" && errors.Is(err, mcribapi.ErrNotLeader):
		return a.forwardToLeader(w, r, c.forwarded, body)
	case err != nil:
		var answer *mcribapi.Error
		if errors.As(err, &answer) {
			return answer
		}
		return c.failed(err)
	}
	a.logger.Info("operator change", append([]any{"who", by}, done.log...)...)
	a.ops.operator(by, done.event)
	writeJSON(w, http.StatusOK, done.doc)
	return nil
}

// refusalsOr returns the failed of a change whose errors are its
// refusals (refusal) or else a 503 that says what went wrong (failure:
// "the resize could not be carried out") and why.
func refusalsOr(failure string, also ...error) func(error) error {
	return func(err error) error {
		if answer, ok := refusal(err, also...); ok {
			return answer
		}
		return unavailableAs(failure)(err)
	}
}

// refusal returns the answer of an error that refuses the request
// (mcribapi.ErrBadRequest, ErrRefused or one of also): its status and its
// sentence.
func refusal(err error, also ...error) (error, bool) {
	for _, s := range append([]error{mcribapi.ErrBadRequest, mcribapi.ErrRefused}, also...) {
		if errors.Is(err, s) {
			return mcribapi.Errorf(mcribapi.StatusCode(err), "%s", mcribapi.Sentence(err)), true
		}
	}
	return nil, false
}

// unavailableAs returns the failed of a change whose every error is a 503
// that says what went wrong (failure: "the freeze could not be stored in
// Consul") and why.
func unavailableAs(failure string) func(error) error {
	return func(err error) error { return mcribapi.Errorf(http.StatusServiceUnavailable, "%s: %v", failure, err) }
}
