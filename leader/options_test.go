package leader

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

func TestNewOptions(t *testing.T) {
	client, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	valid := Options{Client: client, Key: "mcrib/default/leader", ID: "127.0.0.1:7070"}
	with := func(f func(*Options)) Options {
		o := valid
		f(&o)
		return o
	}
	tests := []struct {
		name          string
		opts          Options
		wantErr       bool
		wantLockDelay time.Duration
		wantCheckTTL  time.Duration
	}{
		{"defaults", valid, false, DefaultLockDelay, DefaultCheckTTL},
		{"explicit", with(func(o *Options) { o.LockDelay = time.Second; o.CheckTTL = 500 * time.Millisecond }), false, time.Second, 500 * time.Millisecond},
		{"longest lock delay", with(func(o *Options) { o.LockDelay = time.Minute }), false, time.Minute, DefaultCheckTTL},
		{"no client", with(func(o *Options) { o.Client = nil }), true, 0, 0},
		{"no key", with(func(o *Options) { o.Key = "" }), true, 0, 0},
		{"no id", with(func(o *Options) { o.ID = "" }), true, 0, 0},
		{"negative lock delay", with(func(o *Options) { o.LockDelay = -time.Second }), true, 0, 0},
		{"lock delay over a minute", with(func(o *Options) { o.LockDelay = 61 * time.Second }), true, 0, 0},
		{"negative check ttl", with(func(o *Options) { o.CheckTTL = -time.Second }), true, 0, 0},
		{"check ttl too short", with(func(o *Options) { o.CheckTTL = 100 * time.Millisecond }), true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(tt.opts)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidOptions) {
					t.Fatalf("New: err = %v, want ErrInvalidOptions", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if e.opts.LockDelay != tt.wantLockDelay || e.opts.CheckTTL != tt.wantCheckTTL || e.opts.Logger == nil {
				t.Errorf("New: LockDelay %v, CheckTTL %v, Logger %v; want %v, %v, non-nil",
					e.opts.LockDelay, e.opts.CheckTTL, e.opts.Logger, tt.wantLockDelay, tt.wantCheckTTL)
			}
			if e.IsLeader() || e.Session() != "" || e.LeaderID() != "" {
				t.Errorf("new Elector: IsLeader %v, Session %q, LeaderID %q; want false, empty, empty",
					e.IsLeader(), e.Session(), e.LeaderID())
			}
			e.StepDown() // must be a no-op when not leading
		})
	}
}
