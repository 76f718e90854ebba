package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// envOf returns a getenv over a fixed map.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// contractDefaults is the defaults of docs/cli.md, "mcrib serve flags".
func contractDefaults() serveConfig {
	return serveConfig{
		Consul:                   "127.0.0.1:8500",
		Service:                  "memcached",
		Tag:                      "",
		Pool:                     "default",
		Slots:                    16,
		KVPrefix:                 "mcrib",
		Listen:                   "127.0.0.1:7070",
		TokenFile:                "",
		Token:                    "",
		Hold:                     60 * time.Second,
		ProbeInterval:            2 * time.Second,
		FlushAfterUnreachable:    0,
		MaxAbsentFraction:        0.25,
		MaxReplacementsPerMinute: 2,
		StatsInterval:            5 * time.Second,
		BootLimitMax:             1000,
		BootLimitMin:             10,
		HitRateTarget:            0.90,
		HitRateLow:               0.80,
		McrouterConfig:           "",
		TwemproxyConfig:          "",
		TwemproxyListen:          "127.0.0.1:22121",
		WarmFor:                  30 * time.Minute,
		WarmMin:                  30 * time.Second,
		WarmCopyRate:             20_000_000,
		WarmTTL:                  time.Hour,
		LogFormat:                "text",
	}
}

func TestParseServeConfigDefaults(t *testing.T) {
	cfg, err := parseServeConfig(nil, envOf(nil))
	if err != nil {
		t.Fatalf("parseServeConfig(nil): %v", err)
	}
	if want := contractDefaults(); cfg != want {
		t.Errorf("defaults differ from the contract:\n got %+v\nwant %+v", cfg, want)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseServeConfigSources(t *testing.T) {
	tokenFile := writeFile(t, "token", "  s3cret \n")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		edit func(*serveConfig) // turns the defaults into the wanted config
	}{
		{"env fallback", nil, map[string]string{"MCRIB_HOLD": "45s"},
			func(c *serveConfig) { c.Hold = 45 * time.Second }},
		{"flag beats env", []string{"--hold", "30s"}, map[string]string{"MCRIB_HOLD": "45s"},
			func(c *serveConfig) { c.Hold = 30 * time.Second }},
		{"flag=value form", []string{"--hold=10s", "-slots=8"}, nil,
			func(c *serveConfig) { c.Hold = 10 * time.Second; c.Slots = 8 }},
		{"one slot", []string{"--slots", "1"}, nil,
			func(c *serveConfig) { c.Slots = 1 }},
		{"4096 slots", []string{"--slots", "4096"}, nil,
			func(c *serveConfig) { c.Slots = 4096 }},
		{"twemproxy flags", []string{"--twemproxy-config", "/etc/nutcracker/mcrib.yml", "--twemproxy-listen", "0.0.0.0:22122"}, nil,
			func(c *serveConfig) {
				c.TwemproxyConfig, c.TwemproxyListen = "/etc/nutcracker/mcrib.yml", "0.0.0.0:22122"
			}},
		{"twemproxy flags from env", nil, map[string]string{"MCRIB_TWEMPROXY_CONFIG": "/tmp/n.yml", "MCRIB_TWEMPROXY_LISTEN": "127.0.0.1:22123"},
			func(c *serveConfig) { c.TwemproxyConfig, c.TwemproxyListen = "/tmp/n.yml", "127.0.0.1:22123" }},
		{"dashes become underscores", nil, map[string]string{"MCRIB_MAX_ABSENT_FRACTION": "0.5", "MCRIB_MAX_REPLACEMENTS_PER_MINUTE": "0"},
			func(c *serveConfig) { c.MaxAbsentFraction = 0.5; c.MaxReplacementsPerMinute = 0 }},
		{"CONSUL_HTTP_ADDR is the consul default", nil, map[string]string{"CONSUL_HTTP_ADDR": "10.0.0.1:8500"},
			func(c *serveConfig) { c.Consul = "10.0.0.1:8500" }},
		{"MCRIB_CONSUL beats CONSUL_HTTP_ADDR", nil, map[string]string{"CONSUL_HTTP_ADDR": "10.0.0.1:8500", "MCRIB_CONSUL": "10.0.0.2:8500"},
			func(c *serveConfig) { c.Consul = "10.0.0.2:8500" }},
		{"--consul beats both", []string{"--consul", "https://consul:8501"}, map[string]string{"CONSUL_HTTP_ADDR": "10.0.0.1:8500", "MCRIB_CONSUL": "10.0.0.2:8500"},
			func(c *serveConfig) { c.Consul = "https://consul:8501" }},
		{"every string flag", []string{"--service", "mc", "--tag", "blue", "--pool", "p1", "--kv-prefix", "/team/mcrib/", "--listen", "localhost:0", "--mcrouter-config", "/tmp/mcrouter.json", "--log-format", "json"}, nil,
			func(c *serveConfig) {
				c.Service, c.Tag, c.Pool, c.KVPrefix, c.Listen, c.McrouterConfig, c.LogFormat = "mc", "blue", "p1", "team/mcrib", "localhost:0", "/tmp/mcrouter.json", "json"
			}},
		{"every number flag", []string{"--probe-interval", "500ms", "--flush-after-unreachable", "3s", "--stats-interval", "1s", "--boot-limit-max", "500", "--boot-limit-min", "0", "--hit-rate-target", "1", "--hit-rate-low", "0"}, nil,
			func(c *serveConfig) {
				c.ProbeInterval, c.FlushAfterUnreachable, c.StatsInterval = 500*time.Millisecond, 3*time.Second, time.Second
				c.BootLimitMax, c.BootLimitMin, c.HitRateTarget, c.HitRateLow = 500, 0, 1, 0
			}},
		{"cold moves and the longest warm TTL", []string{"--warm-for", "0s", "--warm-ttl", "720h"}, nil,
			func(c *serveConfig) { c.WarmFor, c.WarmMin, c.WarmTTL = 0, 0, 30*24*time.Hour }},
		{"warm flags from env", nil, map[string]string{"MCRIB_WARM_FOR": "90s", "MCRIB_WARM_TTL": "10m", "MCRIB_WARM_MIN": "45s", "MCRIB_WARM_COPY_RATE": "512kB"},
			func(c *serveConfig) {
				c.WarmFor, c.WarmTTL, c.WarmMin, c.WarmCopyRate = 90*time.Second, 10*time.Minute, 45*time.Second, 512_000
			}},
		{"--warm-min above --warm-for is --warm-for", []string{"--warm-for", "20s", "--warm-min", "1m"}, nil,
			func(c *serveConfig) { c.WarmFor, c.WarmMin = 20*time.Second, 20*time.Second }},
		{"the copy off", []string{"--warm-copy-rate", "0"}, nil,
			func(c *serveConfig) { c.WarmCopyRate = 0 }},
		{"a binary unit", []string{"--warm-copy-rate", "2MiB"}, nil,
			func(c *serveConfig) { c.WarmCopyRate = 2 << 20 }},
		{"plain bytes", []string{"--warm-copy-rate", " 1500 "}, nil,
			func(c *serveConfig) { c.WarmCopyRate = 1500 }},
		{"hit-rate-low equal to target", []string{"--hit-rate-low", "0.9"}, nil,
			func(c *serveConfig) { c.HitRateLow = 0.9 }},
		{"token from MCRIB_TOKEN", nil, map[string]string{"MCRIB_TOKEN": " tok\n"},
			func(c *serveConfig) { c.Token = "tok" }},
		{"token file wins over MCRIB_TOKEN, trimmed", []string{"--token-file", tokenFile}, map[string]string{"MCRIB_TOKEN": "tok"},
			func(c *serveConfig) { c.TokenFile, c.Token = tokenFile, "s3cret" }},
		{"token file from env", nil, map[string]string{"MCRIB_TOKEN_FILE": tokenFile},
			func(c *serveConfig) { c.TokenFile, c.Token = tokenFile, "s3cret" }},
		{"typed values from env", nil, map[string]string{"MCRIB_SLOTS": " 8 ", "MCRIB_PROBE_INTERVAL": "500ms", "MCRIB_BOOT_LIMIT_MAX": "2.5e2", "MCRIB_HIT_RATE_LOW": "0.5"},
			func(c *serveConfig) {
				c.Slots, c.ProbeInterval, c.BootLimitMax, c.HitRateLow = 8, 500*time.Millisecond, 250, 0.5
			}},
		{"a flag beats a bad env value", []string{"--slots", "8"}, map[string]string{"MCRIB_SLOTS": "many"},
			func(c *serveConfig) { c.Slots = 8 }},
		{"an empty env value counts as unset", nil, map[string]string{"MCRIB_HOLD": "", "MCRIB_POOL": ""},
			func(c *serveConfig) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := contractDefaults()
			tt.edit(&want)
			got, err := parseServeConfig(tt.args, envOf(tt.env))
			if err != nil {
				t.Fatalf("parseServeConfig(%q): %v", tt.args, err)
			}
			if got != want {
				t.Errorf("parseServeConfig(%q)\n got %+v\nwant %+v", tt.args, got, want)
			}
		})
	}
}

func TestServeBadValues(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, "empty", " \n")
	tests := []struct {
		args []string
		env  map[string]string
		want []string // substrings of the one error line
		line string   // when set, the exact line
	}{
		{args: []string{"--slots", "0"}, line: "mcrib serve: --slots must be at least 1, got 0"},
		{args: []string{"--slots", "-3"}, want: []string{"--slots"}},
		{args: []string{"--slots", "70000"}, want: []string{"--slots", "at most"}},
		{args: []string{"--slots", "8192"}, line: "mcrib serve: --slots must be at most 4096, got 8192"},
		{args: []string{"--slots", "4097"}, want: []string{"--slots", "at most 4096"}},
		{args: []string{"--slots", "12"}, line: "mcrib serve: --slots must be a power of two from 1 to 4096, got 12 (with other counts mcrouter and twemproxy send about half of all keys to different nodes)"},
		{args: []string{"--slots", "3"}, want: []string{"--slots", "power of two", "got 3"}},
		{args: []string{"--slots", "100"}, want: []string{"--slots", "power of two", "got 100"}},
		{args: []string{"--slots", "4095"}, want: []string{"--slots", "power of two", "got 4095"}},
		{env: map[string]string{"MCRIB_SLOTS": "24"}, want: []string{"--slots", "power of two", "got 24", "MCRIB_SLOTS"}},
		{args: []string{"--twemproxy-listen", "22121"}, want: []string{"--twemproxy-listen", "host:port"}},
		{args: []string{"--twemproxy-listen", "127.0.0.1:70000"}, want: []string{"--twemproxy-listen", "70000"}},
		{args: []string{"--slots", "many"}, want: []string{"--slots", `"many"`}},
		{args: []string{"--hold", "-1s"}, line: "mcrib serve: --hold must not be negative, got -1s"},
		{args: []string{"--hold", "soon"}, want: []string{"--hold", `"soon"`}},
		{args: []string{"--probe-interval", "0s"}, want: []string{"--probe-interval", "above zero"}},
		{args: []string{"--probe-interval", "-2s"}, want: []string{"--probe-interval", "negative"}},
		{args: []string{"--stats-interval", "0"}, want: []string{"--stats-interval"}},
		{args: []string{"--warm-for", "-1s"}, line: "mcrib serve: --warm-for must not be negative, got -1s"},
		{args: []string{"--warm-for", "later"}, want: []string{"--warm-for", `"later"`}},
		{args: []string{"--warm-ttl", "0s"}, want: []string{"--warm-ttl", "above zero"}},
		{args: []string{"--warm-min", "-1s"}, want: []string{"--warm-min", "negative"}},
		{args: []string{"--warm-copy-rate", "-1MB"}, want: []string{"--warm-copy-rate", "negative", "-1MB"}},
		{args: []string{"--warm-copy-rate", "fast"}, want: []string{"--warm-copy-rate", `"fast"`, "number of bytes"}},
		{args: []string{"--warm-copy-rate", "20Mb"}, want: []string{"--warm-copy-rate", "number of bytes"}},
		{args: []string{"--warm-ttl", "-1h"}, want: []string{"--warm-ttl", "negative"}},
		{args: []string{"--warm-ttl", "721h"}, want: []string{"--warm-ttl", "at most", "30 days"}},
		{env: map[string]string{"MCRIB_WARM_FOR": "-2m"}, want: []string{"--warm-for", "MCRIB_WARM_FOR"}},
		{args: []string{"--flush-after-unreachable", "-5m"}, want: []string{"--flush-after-unreachable", "negative"}},
		{args: []string{"--max-absent-fraction", "1.5"}, want: []string{"--max-absent-fraction", "1.5"}},
		{args: []string{"--max-absent-fraction", "-0.1"}, want: []string{"--max-absent-fraction"}},
		{args: []string{"--max-absent-fraction", "NaN"}, want: []string{"--max-absent-fraction"}},
		{args: []string{"--hit-rate-target", "1.2"}, want: []string{"--hit-rate-target"}},
		{args: []string{"--hit-rate-low", "0.95"}, line: "mcrib serve: --hit-rate-low (0.95) must not be above --hit-rate-target (0.90)"},
		{args: []string{"--hit-rate-low", "0.5", "--hit-rate-target", "0.4"}, want: []string{"--hit-rate-low (0.5)", "--hit-rate-target (0.4)"}},
		{args: []string{"--boot-limit-max", "-1"}, want: []string{"--boot-limit-max", "negative"}},
		{args: []string{"--boot-limit-max", "+Inf"}, want: []string{"--boot-limit-max", "finite"}},
		{args: []string{"--boot-limit-min", "2000"}, want: []string{"--boot-limit-min (2000)", "--boot-limit-max (1000)"}},
		{args: []string{"--max-replacements-per-minute", "-1"}, want: []string{"--max-replacements-per-minute"}},
		{args: []string{"--log-format", "xml"}, want: []string{"--log-format", `"xml"`}},
		{args: []string{"--pool", ""}, want: []string{"--pool", "empty"}},
		{args: []string{"--pool", "a/b"}, want: []string{"--pool", "'/'"}},
		{args: []string{"--service", ""}, want: []string{"--service", "empty"}},
		{args: []string{"--service", "mem/cached"}, want: []string{"--service", "'/'"}},
		{args: []string{"--kv-prefix", "/"}, want: []string{"--kv-prefix", "empty"}},
		{args: []string{"--consul", " "}, want: []string{"--consul", "empty"}},
		{args: []string{"--listen", "7070"}, want: []string{"--listen", "host:port"}},
		{args: []string{"--listen", "127.0.0.1:99999"}, want: []string{"--listen", "99999"}},
		{args: []string{"--token-file", filepath.Join(dir, "missing")}, want: []string{"--token-file", "missing", "cannot be read"}},
		{args: []string{"--token-file", dir}, want: []string{"--token-file", "cannot be read"}},
		{args: []string{"--token-file", empty}, want: []string{"--token-file", "empty"}},
		{args: []string{"--bogus"}, want: []string{"--bogus"}},
		{args: []string{"--hold"}, want: []string{"--hold", "argument"}},
		{args: []string{"extra"}, want: []string{`"extra"`}},
		{env: map[string]string{"MCRIB_HOLD": "abc"}, want: []string{"MCRIB_HOLD", "--hold", `"abc"`}},
		{env: map[string]string{"MCRIB_SLOTS": "0"}, want: []string{"--slots", "MCRIB_SLOTS"}},
		{env: map[string]string{"MCRIB_MAX_ABSENT_FRACTION": "2"}, want: []string{"--max-absent-fraction", "MCRIB_MAX_ABSENT_FRACTION"}},
		{env: map[string]string{"MCRIB_TOKEN_FILE": filepath.Join(dir, "missing")}, want: []string{"--token-file", "MCRIB_TOKEN_FILE"}},
		{args: []string{"--hold", "soon"}, line: `mcrib serve: invalid value "soon" for --hold: not a duration (like 45s, 2m or 1m30s)`},
		{args: []string{"--slots", "1.5"}, line: `mcrib serve: invalid value "1.5" for --slots: not a whole number`},
		{args: []string{"--boot-limit-max", "lots"}, line: `mcrib serve: invalid value "lots" for --boot-limit-max: not a number`},
		{env: map[string]string{"MCRIB_SLOTS": "many"}, line: `mcrib serve: invalid value "many" in MCRIB_SLOTS for --slots: not a whole number`},
		{env: map[string]string{"MCRIB_HIT_RATE_LOW": "0.95"}, line: "mcrib serve: --hit-rate-low (0.95) must not be above --hit-rate-target (0.90) (from MCRIB_HIT_RATE_LOW)"},
	}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		for k, v := range tt.env {
			name += " " + k + "=" + v
		}
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"serve"}, tt.args...), &stdout, &stderr, envOf(tt.env))
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			out := stderr.String()
			if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
				t.Fatalf("stderr %q, want exactly one line", out)
			}
			line := strings.TrimSuffix(out, "\n")
			if tt.line != "" && line != tt.line {
				t.Errorf("stderr line\n got %q\nwant %q", line, tt.line)
			}
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("stderr line %q does not contain %q", line, w)
				}
			}
		})
	}
}

func TestServeHelp(t *testing.T) {
	for _, args := range [][]string{{"serve", "-h"}, {"serve", "--help"}, {"help", "serve"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr, envOf(nil)); code != 0 {
				t.Errorf("exit code %d, want 0 (stderr %q)", code, stderr.String())
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr %q, want nothing", stderr.String())
			}
			for _, s := range serveFlags() {
				if !strings.Contains(stdout.String(), "--"+s.name+" ") || !strings.Contains(stdout.String(), envName(s.name)) {
					t.Errorf("help does not list --%s and %s:\n%s", s.name, envName(s.name), stdout.String())
				}
			}
		})
	}
	if _, err := parseServeConfig([]string{"-h"}, envOf(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("parseServeConfig(-h) error %v, want flag.ErrHelp", err)
	}
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"hold":                        "MCRIB_HOLD",
		"max-absent-fraction":         "MCRIB_MAX_ABSENT_FRACTION",
		"max-replacements-per-minute": "MCRIB_MAX_REPLACEMENTS_PER_MINUTE",
	} {
		if got := envName(in); got != want {
			t.Errorf("envName(%q) = %q, want %q", in, got, want)
		}
	}
}
