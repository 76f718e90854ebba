package metrics

import (
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mcrib/mcrib/internal/kvlayout"
)

// TestKVCorruptGauge checks mcrib_kv_corrupt_documents: 1 for each corrupt
// document, 0 (pre-created) for the others.
func TestKVCorruptGauge(t *testing.T) {
	for _, tt := range []struct {
		corrupt []string
		want    []string
	}{
		{nil, []string{`mcrib_kv_corrupt_documents{key="freeze"} 0`, `mcrib_kv_corrupt_documents{key="slotmap"} 0`}},
		{[]string{"freeze"}, []string{`mcrib_kv_corrupt_documents{key="freeze"} 1`, `mcrib_kv_corrupt_documents{key="slotmap"} 0`}},
		{[]string{"slotmap", "freeze"}, []string{`mcrib_kv_corrupt_documents{key="freeze"} 1`, `mcrib_kv_corrupt_documents{key="slotmap"} 1`}},
	} {
		_, h := newRecorder(t, func() Gauges { return Gauges{CorruptDocuments: tt.corrupt} })
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		for _, w := range tt.want {
			if !strings.Contains(string(body), w) {
				t.Errorf("corrupt %v: the scrape lacks %s", tt.corrupt, w)
			}
		}
	}
}

// TestKVCorruptGaugeCoversEveryCheckedDocument: each document a read
// checks (kvlayout.Checked) has its label, 0 while it parses and 1 while
// it does not; the resize document was once left out.
func TestKVCorruptGaugeCoversEveryCheckedDocument(t *testing.T) {
	for _, key := range kvlayout.Checked() {
		for _, corrupt := range []bool{false, true} {
			var g Gauges
			want := `mcrib_kv_corrupt_documents{key="` + key + `"} 0`
			if corrupt {
				g.CorruptDocuments = []string{key}
				want = `mcrib_kv_corrupt_documents{key="` + key + `"} 1`
			}
			_, h := newRecorder(t, func() Gauges { return g })
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			body, _ := io.ReadAll(rec.Body)
			if !strings.Contains(string(body), want) {
				t.Errorf("the scrape lacks %s", want)
			}
		}
	}
	if !slices.Contains(kvlayout.Checked(), kvlayout.Resize) {
		t.Error("kvlayout.Checked leaves out the resize document")
	}
}
