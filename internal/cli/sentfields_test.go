package cli

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestDecodeDocumentSentFields(t *testing.T) {
	tests := []struct {
		name string
		json string
		want []string
	}{
		{name: "flat", json: `{"a":1,"b":"x","c":false}`, want: []string{"a", "b", "c"}},
		{name: "null is not sent", json: `{"a":null,"b":0}`, want: []string{"b"}},
		{name: "nested objects and arrays",
			json: `{"o":{"x":1,"n":null},"l":[{"id":"a"},{"id":null},[true]],"e":[],"m":{}}`,
			want: []string{"e", "l", "l.0", "l.0.id", "l.1", "l.2", "l.2.0", "m", "o", "o.x"}},
		{name: "not an object", json: `"hello"`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			sent, err := decodeDocument([]byte(tt.json), &v)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(sent)); !slices.Equal(got, tt.want) {
				t.Errorf("sent fields %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecodeDocumentRefusesBadJSON(t *testing.T) {
	for _, in := range []string{`{"a":`, `{"a":1}{`, ``} {
		var v map[string]int
		if _, err := decodeDocument([]byte(in), &v); err == nil {
			t.Errorf("decodeDocument(%q) = nil error, want one", in)
		}
	}
}

func TestSentFieldsUnder(t *testing.T) {
	s := sentFields{"boot_limit": true, "boot_limit.mode": true, "boot_limit_x": true, "nodes.1.flaps": true}
	if got := slices.Sorted(maps.Keys(s.under("boot_limit"))); strings.Join(got, ",") != "mode" {
		t.Errorf("under(boot_limit) = %q, want [mode]", got)
	}
	if !s.under("nodes.1").has("flaps") || s.under("nodes.0").has("flaps") {
		t.Errorf("under(nodes.N) mixes up the nodes")
	}
	var all sentFields
	if !all.has("anything") || !all.under("x").has("y") {
		t.Errorf("the nil set must count every field as sent")
	}
}
