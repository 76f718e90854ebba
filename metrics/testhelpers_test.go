package metrics

import (
	"bufio"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// scrape GETs /metrics from h and returns the sample lines (no comments)
// and the metric family names from the # TYPE lines.
func scrape(t *testing.T, h http.Handler) (samples map[string]bool, families map[string]string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, body %q", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("GET /metrics: Content-Type %q, want text/plain", ct)
	}
	body, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatalf("reading /metrics body: %v", err)
	}
	samples = map[string]bool{}
	families = map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("malformed TYPE line %q", line)
			}
			families[f[2]] = f[3]
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			samples[line] = true
		}
	}
	return samples, families
}

// seriesNames returns the names a query can use of the metric families
// scraped: each family's, and a histogram's _bucket, _sum and _count.
func seriesNames(families map[string]string) map[string]bool {
	names := map[string]bool{}
	for name, typ := range families {
		names[name] = true
		if typ == "histogram" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[name+suffix] = true
			}
		}
	}
	return names
}

// wantLines fails the test for every line of want that the scrape lacks.
func wantLines(t *testing.T, samples map[string]bool, want ...string) {
	t.Helper()
	for _, w := range want {
		if !samples[w] {
			t.Errorf("scrape lacks line %q", w)
		}
	}
	if t.Failed() {
		t.Logf("scraped samples:\n%s", sortedLines(samples))
	}
}

func sortedLines(samples map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(samples)), "\n")
}
