package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcrib/mcrib/mcribapi"
)

// Every end-to-end test decodes the API's documents one way: into the
// types of package mcribapi (the slot map with cachenodes.ParseSlotMap),
// the ones mcrib itself serves and reads. decodeAs is that decoding, and
// isErrorBody the one check of an error answer.

// decodeAs decodes body, the answer of what ("/v1/status"), as a T.
func decodeAs[T any](body []byte, what string) (T, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("decoding %s: %v: %s", what, err, bytes.TrimSpace(body))
	}
	return v, nil
}

// isErrorBody reports whether b is an mcribapi.ErrorBody with one
// sentence: {"error": "<one sentence>"}.
func isErrorBody(b []byte) bool {
	e, err := decodeAs[mcribapi.ErrorBody](b, "an error answer")
	return err == nil && e.Error != "" && !strings.Contains(strings.TrimSuffix(e.Error, "."), "\n")
}
