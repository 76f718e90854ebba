// Package apibody holds the body rules of mcrib's operator API, shared by
// the server's handlers and the boot gate: a body is at most MaxBytes
// (larger is 413), and a body that is not empty is sent as
// application/json (else 415; an empty body never is). The checks run in
// that order, so a body too large is 413 whatever its media type.
// WriteJSON writes every answer of the API, its errors included, one way.
//
// The package holds no state; its functions are safe for concurrent use.
package apibody

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MaxBytes is the largest request body the API reads: 64 KiB.
const MaxBytes = 64 << 10

var (
	// ErrTooLarge is wrapped by Read's error for a body over MaxBytes
	// (HTTP 413).
	ErrTooLarge = errors.New("apibody: the request body is too large")
	// ErrUnreadable is wrapped by Read's error for a body that could not
	// be read to its end: truncated, or its caller hung up (HTTP 400).
	ErrUnreadable = errors.New("apibody: the request body could not be read")
	// ErrNotJSON is wrapped by Read's error for a body that is not sent
	// as application/json (HTTP 415).
	ErrNotJSON = errors.New("apibody: the request body is not sent as application/json")
)

// Read reads r's body, at most MaxBytes of it, and checks its media type
// when it is not empty. The error wraps ErrTooLarge, ErrUnreadable or
// ErrNotJSON, and its text is one readable sentence after the sentinel's
// (Sentence gives it). A nil body reads as empty. w is the answer's writer,
// as http.MaxBytesReader takes it (it closes the connection after a body
// too large); it may be nil.
func Read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, fmt.Errorf("%w: the request body is larger than the %d KiB allowed", ErrTooLarge, MaxBytes>>10)
	case err != nil:
		return nil, fmt.Errorf("%w: the request body could not be read to its end (%v)", ErrUnreadable, err)
	}
	if len(body) > 0 && !IsJSON(r.Header.Get("Content-Type")) {
		return nil, fmt.Errorf("%w: a request body must be sent with \"Content-Type: application/json\", not %q", ErrNotJSON, r.Header.Get("Content-Type"))
	}
	return body, nil
}

// IsJSON reports whether a Content-Type header names the media type
// application/json, in any case, with or without parameters
// ("application/json; charset=utf-8").
func IsJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

// Status returns the HTTP status of an error of Read: 413, 415 or 400;
// 0 for an error that is none of Read's.
func Status(err error) int {
	switch {
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrNotJSON):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, ErrUnreadable):
		return http.StatusBadRequest
	}
	return 0
}

// Sentence returns the readable sentence of an error of Read, without the
// sentinel's prefix.
func Sentence(err error) string {
	msg := err.Error()
	for _, s := range []error{ErrTooLarge, ErrUnreadable, ErrNotJSON} {
		if rest, ok := strings.CutPrefix(msg, s.Error()+": "); ok {
			return rest
		}
	}
	return msg
}

// WriteJSON writes v as the JSON answer with status: Content-Type
// application/json, Cache-Control no-store, and the JSON followed by a
// newline. A v that does not encode is a 500 with a JSON error.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
