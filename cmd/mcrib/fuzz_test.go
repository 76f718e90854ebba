package main

import (
	"math"
	"strings"
	"testing"

	"github.com/mcrib/mcrib/internal/apiserver"
)

// FuzzServeFlags parses arbitrary `mcrib serve` arguments and environment
// (one argument or NAME=value per line): no panic, and a configuration that
// is accepted obeys every rule of the bad values (docs/cli.md). Inputs naming
// files (--token-file, --tls-*) are skipped: the fuzzer must not read
// arbitrary paths.
func FuzzServeFlags(f *testing.F) {
	f.Add("--slots\n16\n--listen\n127.0.0.1:7070", "")
	f.Add("--listen\n0.0.0.0:7070\n--insecure-no-token", "MCRIB_HOLD=45s")
	f.Add("--hit-rate-low=0.95", "MCRIB_HIT_RATE_TARGET=0.9")
	f.Add("--slots=4096\n--kv-prefix=/a/b/", "MCRIB_LISTEN=[::1]:0\nMCRIB_TOKEN=x")
	f.Add("--boot-limit-max\nInf", "MCRIB_SLOTS= 8 ")
	f.Fuzz(func(t *testing.T, argText, envText string) {
		if strings.Contains(argText+envText, "TOKEN_FILE") || strings.Contains(argText+envText, "token-file") ||
			strings.Contains(argText+envText, "tls-") || strings.Contains(argText+envText, "TLS_") {
			return
		}
		var args []string
		if argText != "" {
			args = strings.Split(argText, "\n")
		}
		env := map[string]string{}
		for _, line := range strings.Split(envText, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				env[k] = v
			}
		}
		cfg, err := parseServeConfig(args, envOf(env))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is more than one line", err)
			}
			return
		}
		switch {
		case cfg.Slots < 1 || cfg.Slots > maxSlots || cfg.Slots&(cfg.Slots-1) != 0:
			t.Fatalf("accepted --slots %d", cfg.Slots)
		case cfg.Hold < 0 || cfg.FlushAfterUnreachable < 0 || cfg.ProbeInterval <= 0 || cfg.StatsInterval <= 0:
			t.Fatalf("accepted durations %+v", cfg)
		case !(cfg.MaxAbsentFraction >= 0 && cfg.MaxAbsentFraction <= 1), !(cfg.HitRateLow >= 0 && cfg.HitRateLow <= cfg.HitRateTarget && cfg.HitRateTarget <= 1):
			t.Fatalf("accepted fractions %+v", cfg)
		case math.IsInf(cfg.BootLimitMax, 0) || math.IsNaN(cfg.BootLimitMax) || cfg.BootLimitMin < 0 || cfg.BootLimitMin > cfg.BootLimitMax:
			t.Fatalf("accepted boot limits %v..%v", cfg.BootLimitMin, cfg.BootLimitMax)
		case cfg.MaxReplacementsPerMinute < 0:
			t.Fatalf("accepted --max-replacements-per-minute %d", cfg.MaxReplacementsPerMinute)
		case cfg.KVPrefix == "" || strings.HasPrefix(cfg.KVPrefix, "/") || strings.HasSuffix(cfg.KVPrefix, "/"):
			t.Fatalf("accepted --kv-prefix %q", cfg.KVPrefix)
		case cfg.Pool == "" || strings.Contains(cfg.Pool, "/") || cfg.Service == "" || strings.Contains(cfg.Service, "/"):
			t.Fatalf("accepted --pool %q --service %q", cfg.Pool, cfg.Service)
		case checkHostPort(cfg.Listen) != nil || checkHostPort(cfg.TwemproxyListen) != nil:
			t.Fatalf("accepted --listen %q --twemproxy-listen %q", cfg.Listen, cfg.TwemproxyListen)
		case cfg.Token == "" && !cfg.InsecureNoToken && !apiserver.IsLoopbackListen(cfg.Listen):
			t.Fatalf("accepted a non-loopback --listen %q without a token", cfg.Listen)
		case cfg.LogFormat != "text" && cfg.LogFormat != "json":
			t.Fatalf("accepted --log-format %q", cfg.LogFormat)
		}
	})
}
