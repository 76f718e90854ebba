package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/mcrib/mcrib/controlloop"
)

func TestConfigWrites(t *testing.T) {
	at := time.Unix(1_796_000_000, 500_000_000)
	tests := []struct {
		name   string
		writes func(r *Recorder)
		want   []string
	}{
		{
			name:   "nothing written",
			writes: func(r *Recorder) {},
			want: []string{
				`mcrib_config_write_failures_total{kind="mcrouter"} 0`,
				`mcrib_config_write_failures_total{kind="twemproxy"} 0`,
				`mcrib_config_last_write_timestamp_seconds{kind="mcrouter"} 0`,
				`mcrib_config_last_write_timestamp_seconds{kind="twemproxy"} 0`,
			},
		},
		{
			name: "failures counted by kind, the last success's time kept",
			writes: func(r *Recorder) {
				r.ConfigWrite(controlloop.ConfigMcrouter, at.Add(-time.Hour), nil)
				r.ConfigWrite(controlloop.ConfigMcrouter, at, nil)
				r.ConfigWrite(controlloop.ConfigMcrouter, at.Add(time.Minute), errors.New("disk full"))
				r.ConfigWrite(controlloop.ConfigTwemproxy, at, errors.New("no such directory"))
				r.ConfigWrite(controlloop.ConfigTwemproxy, at.Add(time.Second), errors.New("no such directory"))
			},
			want: []string{
				`mcrib_config_write_failures_total{kind="mcrouter"} 1`,
				`mcrib_config_write_failures_total{kind="twemproxy"} 2`,
				`mcrib_config_last_write_timestamp_seconds{kind="mcrouter"} 1.7960000005e+09`,
				`mcrib_config_last_write_timestamp_seconds{kind="twemproxy"} 0`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, s := newRecorder(t, func() Gauges { return Gauges{} })
			tt.writes(r)
			samples, _ := scrape(t, s)
			wantLines(t, samples, tt.want...)
		})
	}
}
