package controlloop

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcrib/mcrib/mcribapi"
)

// FuzzParseFreezeRequest checks the PUT /v1/freeze body: an accepted
// reason is non-empty and within mcribapi.MaxReason characters, and the
// freeze document stored from it reads back as the same freeze. Any
// stored freeze value, whatever it holds, reads as frozen.
func FuzzParseFreezeRequest(f *testing.F) {
	f.Add([]byte(`{"reason": "deploy of the cache tier"}`))
	f.Add([]byte(`{"reason": ""}`))
	f.Add([]byte(`{"reason": "a", "extra": 1}`))
	f.Add([]byte(`{"reason": "\u00e9\u00e9"} {}`))
	f.Add([]byte(`{"reason": "half`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if f, err := parseStoredFreeze(body); err == nil && (f == nil || !f.Frozen) {
			t.Fatalf("stored value %q read as not frozen", body)
		}
		reason, err := mcribapi.ParseFreezeRequest(body)
		if err != nil {
			return
		}
		if reason == "" || utf8.RuneCountInString(reason) > mcribapi.MaxReason {
			t.Fatalf("accepted reason %q (%d characters)", reason, utf8.RuneCountInString(reason))
		}
		doc := mcribapi.FreezeDoc{Frozen: true, Reason: reason, At: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), By: "operator@127.0.0.1:1"}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseStoredFreeze(b)
		if err != nil || *got != doc {
			t.Fatalf("stored freeze %s reads back as %+v, %v", b, got, err)
		}
	})
}
