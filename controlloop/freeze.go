package controlloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxFreezeReason is the longest freeze reason accepted, in characters.
const MaxFreezeReason = 512

// ErrBadFreeze is wrapped by every error ParseFreezeRequest returns.
var ErrBadFreeze = errors.New("controlloop: bad freeze request")

// FreezeDoc is the freeze document of CONTRACT.md section 3, stored at
// <kv-prefix>/<pool>/freeze while membership is frozen.
type FreezeDoc struct {
	Frozen bool      `json:"frozen"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	By     string    `json:"by"`
}

// ParseFreezeRequest reads the body of PUT /v1/freeze: exactly one JSON
// object {"reason": "…"} with a non-empty reason of at most 512 characters.
// Its errors are one readable sentence.
func ParseFreezeRequest(body []byte) (reason string, err error) {
	var req struct {
		Reason *string `json:"reason"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return "", fmt.Errorf("%w: the body must be a JSON object like {\"reason\": \"…\"} (%s)", ErrBadFreeze, jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%w: the body must hold exactly one JSON object", ErrBadFreeze)
	}
	if req.Reason == nil || strings.TrimSpace(*req.Reason) == "" {
		return "", fmt.Errorf("%w: a freeze needs a non-empty \"reason\"", ErrBadFreeze)
	}
	if n := utf8.RuneCountInString(*req.Reason); n > MaxFreezeReason {
		return "", fmt.Errorf("%w: the reason is %d characters long, more than the %d allowed", ErrBadFreeze, n, MaxFreezeReason)
	}
	return strings.TrimSpace(*req.Reason), nil
}

// jsonProblem turns a decoding error into a short phrase.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q must be %s", typ.Field, jsonTypeName(typ.Type.Kind()))
	case errors.Is(err, io.EOF):
		return "the body is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends too soon"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonTypeName names the JSON value a Go kind is read from.
func jsonTypeName(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "of another type"
}
