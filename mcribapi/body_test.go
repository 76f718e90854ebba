package mcribapi

import (
	"strings"
	"testing"
)

// A value of the wrong JSON type is named in the operator's words, not
// Go's ("an integer", not "a int").
func TestBadTypeNamedInJSONWords(t *testing.T) {
	for body, want := range map[string]string{
		`{"reason": "x", "percent": "50"}`:      `field "percent" must be an integer`,
		`{"reason": "x", "step_interval": 30}`:  `field "step_interval" must be a string`,
		`{"reason": 5}`:                         `field "reason" must be a string`,
		`{"reason": "x", "step_percent": 10.5}`: `field "step_percent" must be an integer`,
	} {
		_, err := ParseDrainRequest([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}
