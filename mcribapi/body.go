package mcribapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxReason is the longest reason of a freeze, a drain or a replace, in
// characters.
const MaxReason = 512

// decodeOne decodes exactly one JSON object without unknown fields into v;
// example shows the object in the error.
func decodeOne(body []byte, v any, example string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: the body must be a JSON object like %s (%s)", ErrBadRequest, example, jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the body must hold exactly one JSON object", ErrBadRequest)
	}
	return nil
}

// refuseNulls refuses a field of the JSON object body given as null (a
// null would otherwise read as absent, that is as the default); want names
// each field checked with what it must be. body was decoded already.
func refuseNulls(body []byte, want map[string]string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return fmt.Errorf("%w: the body must be a JSON object (%s)", ErrBadRequest, jsonProblem(err))
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if string(bytes.TrimSpace(fields[name])) != "null" {
			continue
		}
		for field, what := range want {
			// encoding/json matches a key to a field regardless of case.
			if strings.EqualFold(name, field) {
				return fmt.Errorf("%w: %q must be %s, not null", ErrBadRequest, field, what)
			}
		}
	}
	return nil
}

// parseReason reads a body that carries only a reason, {"reason": "…"}
// (FreezeRequest, ReplaceRequest), for what ("a freeze").
func parseReason(body []byte, what string) (string, error) {
	var req struct {
		Reason string `json:"reason"`
	}
	if err := decodeOne(body, &req, `{"reason": "…"}`); err != nil {
		return "", err
	}
	return checkReason(req.Reason, what)
}

// checkReason returns the reason r of what ("a drain"), trimmed: not
// empty, at most MaxReason characters.
func checkReason(r, what string) (string, error) {
	if strings.TrimSpace(r) == "" {
		return "", fmt.Errorf("%w: %s needs a non-empty \"reason\"", ErrBadRequest, what)
	}
	if n := utf8.RuneCountInString(r); n > MaxReason {
		return "", fmt.Errorf("%w: the reason is %d characters long, more than the %d allowed", ErrBadRequest, n, MaxReason)
	}
	return strings.TrimSpace(r), nil
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
