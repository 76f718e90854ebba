package mcribapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The refusals of the zone and node operations. The server answers each
// with the status StatusCode gives and the sentence Sentence gives.
var (
	// ErrBadRequest wraps every refusal of a request's body (400).
	ErrBadRequest = errors.New("mcribapi: bad request")
	// ErrUnknownZone: no node is known in that zone (404).
	ErrUnknownZone = errors.New("mcribapi: unknown zone")
	// ErrNotDrained: DELETE of a zone that has no drain entry (404).
	ErrNotDrained = errors.New("mcribapi: zone not drained")
	// ErrUnknownNode: replace of a node the loop does not know (404).
	ErrUnknownNode = errors.New("mcribapi: unknown node")
	// ErrNoResize: DELETE /v1/resize when no resize runs (404).
	ErrNoResize = errors.New("mcribapi: no resize")
	// ErrRefused wraps a conflict (409): a drain that would leave no
	// undrained zone, a replace of a node without a slot, with no spare,
	// while frozen or beyond the ceiling.
	ErrRefused = errors.New("mcribapi: refused")
	// ErrNotLeader: an action only the leader carries out was asked of a
	// follower; the server forwards it to the leader (503 when it cannot).
	ErrNotLeader = errors.New("mcribapi: this process is not the leader")
)

// Error is an answer of the operator API outside 2xx: its status and its
// one readable sentence, sent as ErrorBody. A handler returns it; it is a
// plain value.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with status and the sentence format makes.
func Errorf(status int, format string, args ...any) error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// ErrorBody is the body of every error answer: {"error": "<one readable
// sentence>"}.
type ErrorBody struct {
	Error string `json:"error"`
}

// StatusCode returns the HTTP status err answers with: an *Error's own,
// 400 for ErrBadRequest, 404 for ErrUnknownZone, ErrNotDrained,
// ErrUnknownNode, ErrNoResize and ErrNoRoll, 409 for ErrRefused, 503 for ErrNotLeader, and 500 for
// any other error.
func StatusCode(err error) int {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Status
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnknownZone), errors.Is(err, ErrNotDrained), errors.Is(err, ErrUnknownNode), errors.Is(err, ErrNoResize), errors.Is(err, ErrNoRoll):
		return http.StatusNotFound
	case errors.Is(err, ErrRefused):
		return http.StatusConflict
	case errors.Is(err, ErrNotLeader):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Sentence returns err's message without the prefix of the sentinel it
// wraps ("mcribapi: bad request: "), so that an answer is the one
// sentence that says why.
func Sentence(err error) string {
	msg := err.Error()
	for _, s := range []error{ErrBadRequest, ErrUnknownZone, ErrNotDrained, ErrUnknownNode, ErrNoResize, ErrNoRoll, ErrRefused, ErrNotLeader} {
		if rest, ok := strings.CutPrefix(msg, s.Error()+": "); ok {
			return rest
		}
	}
	return msg
}
