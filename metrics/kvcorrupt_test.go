package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
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
