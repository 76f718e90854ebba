package mcclient

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestPrometheusNames exports the client's metrics as mcrib's /metrics
// does and checks the names applications alert on.
func TestPrometheusNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestClient(t, Options{MaxQueue: 1})
	c, err := New(Options{MaxQueue: 1, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)).Meter("mcclient"), Dial: tc.opts.Dial, Clock: tc.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetSlotMap(slotMap(t, 1, []string{"a"}))
	tc.fleet.node("127.0.0.1:" + port("a")).setDown(true)
	c.Delete("k1")
	c.Delete("k2") // dropped: the queue holds 1
	tc.fleet.node("127.0.0.1:" + port("a")).setDown(false)
	tc.clock.Advance(DefaultRetryMax)
	c.Get("k1") // replays k1

	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`mcrib_client_replay_queue_length{node="a"} 0`,
		`mcrib_client_replays_total{node="a"} 1`,
		`mcrib_client_replay_drops_total{node="a",reason="queue_full"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}
