package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// maxSlots is the largest --slots value mcrib accepts (docs/cli.md,
// "mcrib serve flags"). A slot map far larger than any cache fleet only wastes memory and
// makes the router configs huge.
const maxSlots = 4096

// maxWarmTTL is the longest --warm-ttl: memcached reads an expiry above 30
// days as a Unix time, not as seconds from now.
const maxWarmTTL = 30 * 24 * time.Hour

// serveConfig holds everything `mcrib serve` is told on its command line and
// in its environment, parsed and validated. Its zero value is not a usable
// configuration; build one with parseServeConfig.
type serveConfig struct {
	Consul                   string        // --consul: Consul HTTP address (may carry a scheme)
	Service                  string        // --service: Consul service of the cache nodes
	Tag                      string        // --tag: only instances with this tag ("" = all)
	Pool                     string        // --pool: pool name
	Slots                    int           // --slots: number of slots
	KVPrefix                 string        // --kv-prefix: Consul KV prefix, without leading or trailing '/'
	Listen                   string        // --listen: operator HTTP API address, host:port
	AdvertiseAddr            string        // --advertise-addr: this process's routable host:port, its leader ID ("" = from --listen)
	InsecureNoToken          bool          // --insecure-no-token: allow a non-loopback --listen without a token
	TLSCert                  string        // --tls-cert: PEM certificate to serve the API over TLS ("" = plain HTTP)
	TLSKey                   string        // --tls-key: PEM key of TLSCert
	TokenFile                string        // --token-file: path the token was read from ("" = none)
	Token                    string        // operator bearer token from --token-file or MCRIB_TOKEN ("" = no auth)
	Hold                     time.Duration // --hold
	ProbeInterval            time.Duration // --probe-interval (> 0)
	FlushAfterUnreachable    time.Duration // --flush-after-unreachable
	MaxAbsentFraction        float64       // --max-absent-fraction, 0..1
	MaxReplacementsPerMinute int           // --max-replacements-per-minute, >= 0
	StatsInterval            time.Duration // --stats-interval (> 0)
	WarmFor                  time.Duration // --warm-for (>= 0; 0 = cold moves)
	WarmMin                  time.Duration // --warm-min (>= 0, at most WarmFor)
	WarmCopyRate             int64         // --warm-copy-rate, bytes/s per move (>= 0; 0 = no copy)
	WarmTTL                  time.Duration // --warm-ttl (> 0, <= maxWarmTTL)
	BootLimitMax             float64       // --boot-limit-max, boots/s
	BootLimitMin             float64       // --boot-limit-min, boots/s
	HitRateTarget            float64       // --hit-rate-target, 0..1
	HitRateLow               float64       // --hit-rate-low, 0..1, <= HitRateTarget
	McrouterConfig           string        // --mcrouter-config: path of the mcrouter JSON config ("" = none)
	TwemproxyConfig          string        // --twemproxy-config: path of the nutcracker YAML config ("" = none)
	TwemproxyListen          string        // --twemproxy-listen: the listen address written into that config, host:port
	LogFormat                string        // --log-format: "text" or "json"
}

// serve parses the `mcrib serve` flags and runs the control plane.
func (c proc) serve(ctx context.Context, args []string) error {
	cfg, err := parseServeConfig(args, c.getenv)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return badFlag(err)
	}
	return runServe(ctx, cfg, c.stdout, c.stderr)
}

// parseServeConfig parses and validates the `mcrib serve` arguments (without
// the word "serve"). Every flag falls back to env MCRIB_<NAME> and then to its
// default; a flag given on the command line wins over the environment, and
// a value from either goes through the flag's own parsing. The token comes
// from --token-file when set, else from env MCRIB_TOKEN. On -h or --help it
// returns an error matching flag.ErrHelp. Any other error is one line that
// names the flag and the problem.
func parseServeConfig(args []string, getenv func(string) string) (serveConfig, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var cfg serveConfig
	fs := flag.NewFlagSet("mcrib serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	specs := serveFlags()
	values := make(map[string]*flagValue, len(specs))
	for _, s := range specs {
		v := explainFlag(fs, s.name, s.define(fs, &cfg, s.name, s.usage))
		def := s.def
		if s.defaultFn != nil {
			def = s.defaultFn(getenv)
		}
		if def != "" {
			if err := v.Set(def); err != nil {
				return serveConfig{}, fmt.Errorf("the default %q of --%s is invalid: %v", def, s.name, err)
			}
		}
		values[s.name] = v
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return serveConfig{}, err
		}
		return serveConfig{}, errors.New(dashDash(err.Error()))
	}
	if fs.NArg() > 0 {
		return serveConfig{}, fmt.Errorf("unexpected argument %q: serve takes only flags", fs.Arg(0))
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	for _, s := range specs {
		env := envName(s.name)
		text := getenv(env)
		if onCommandLine[s.name] || text == "" {
			continue
		}
		if err := fs.Set(s.name, text); err != nil {
			return serveConfig{}, fmt.Errorf("invalid value %q in %s for --%s: %v", text, env, s.name, err)
		}
		values[s.name].env = env
	}
	if err := validateServeConfig(&cfg, values); err != nil {
		return serveConfig{}, err
	}
	token, err := readToken(cfg.TokenFile, values["token-file"], getenv)
	if err != nil {
		return serveConfig{}, err
	}
	cfg.Token = token
	if err := checkExposure(cfg, values); err != nil {
		return serveConfig{}, err
	}
	return cfg, nil
}

// validateServeConfig checks ranges and relations between flags and
// normalises the KV prefix. Each error is one line naming the flag; values
// tells the text each flag was set from, and where.
func validateServeConfig(cfg *serveConfig, values map[string]*flagValue) error {
	bad := func(name, format string, a ...any) error {
		return fmt.Errorf("--%s "+format+"%s", append(append([]any{name}, a...), values[name].from())...)
	}
	text := func(name string) string { return values[name].text }
	if strings.TrimSpace(cfg.Consul) == "" {
		return bad("consul", "must not be empty")
	}
	for _, f := range []struct {
		name string
		v    string
	}{{"service", cfg.Service}, {"pool", cfg.Pool}} {
		switch {
		case strings.TrimSpace(f.v) == "":
			return bad(f.name, "must not be empty")
		case strings.Contains(f.v, "/"):
			return bad(f.name, "must not contain '/', got %q", f.v)
		case strings.TrimSpace(f.v) != f.v:
			return bad(f.name, "must not start or end with white space, got %q", f.v)
		}
	}
	if cfg.Slots < 1 {
		return bad("slots", "must be at least 1, got %d", cfg.Slots)
	}
	if cfg.Slots > maxSlots {
		return bad("slots", "must be at most %d, got %d", maxSlots, cfg.Slots)
	}
	if cfg.Slots&(cfg.Slots-1) != 0 {
		return bad("slots", "must be a power of two from 1 to %d, got %d (with other counts mcrouter and twemproxy send about half of all keys to different nodes)", maxSlots, cfg.Slots)
	}
	prefix := strings.Trim(strings.TrimSpace(cfg.KVPrefix), "/")
	if prefix == "" {
		return bad("kv-prefix", "must not be empty, got %q", cfg.KVPrefix)
	}
	cfg.KVPrefix = prefix
	if err := checkHostPort(cfg.Listen); err != nil {
		return bad("listen", "must be host:port, got %q: %v", cfg.Listen, err)
	}
	if cfg.AdvertiseAddr != "" {
		if _, err := advertiseAddr(cfg.AdvertiseAddr, cfg.Listen, nil); err != nil {
			return bad("advertise-addr", "must be a routable host:port, got %q", cfg.AdvertiseAddr)
		}
	}
	if err := checkHostPort(cfg.TwemproxyListen); err != nil {
		return bad("twemproxy-listen", "must be host:port, got %q: %v", cfg.TwemproxyListen, err)
	}
	for _, d := range []struct {
		name     string
		v        time.Duration
		positive bool
	}{
		{"hold", cfg.Hold, false},
		{"probe-interval", cfg.ProbeInterval, true},
		{"flush-after-unreachable", cfg.FlushAfterUnreachable, false},
		{"stats-interval", cfg.StatsInterval, true},
		{"warm-for", cfg.WarmFor, false},
		{"warm-min", cfg.WarmMin, false},
		{"warm-ttl", cfg.WarmTTL, true},
	} {
		if d.v < 0 {
			return bad(d.name, "must not be negative, got %s", d.v)
		}
		if d.positive && d.v == 0 {
			return bad(d.name, "must be above zero, got %s", d.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"max-absent-fraction", cfg.MaxAbsentFraction},
		{"hit-rate-target", cfg.HitRateTarget},
		{"hit-rate-low", cfg.HitRateLow},
	} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return bad(f.name, "must be a fraction between 0 and 1, got %s", text(f.name))
		}
	}
	if cfg.HitRateLow > cfg.HitRateTarget {
		return bad("hit-rate-low", "(%s) must not be above --hit-rate-target (%s)", text("hit-rate-low"), text("hit-rate-target"))
	}
	if cfg.WarmCopyRate < 0 {
		return bad("warm-copy-rate", "must not be negative, got %s", text("warm-copy-rate"))
	}
	cfg.WarmMin = min(cfg.WarmMin, cfg.WarmFor) // the shortest warming is no longer than the longest
	if cfg.WarmTTL > maxWarmTTL {
		return bad("warm-ttl", "must be at most %s (30 days, memcached's longest relative expiry), got %s", maxWarmTTL, cfg.WarmTTL)
	}
	if cfg.MaxReplacementsPerMinute < 0 {
		return bad("max-replacements-per-minute", "must not be negative, got %d", cfg.MaxReplacementsPerMinute)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"boot-limit-max", cfg.BootLimitMax}, {"boot-limit-min", cfg.BootLimitMin}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return bad(f.name, "must be a finite number, got %s", text(f.name))
		}
		if f.v < 0 {
			return bad(f.name, "must not be negative, got %s", text(f.name))
		}
	}
	if cfg.BootLimitMin > cfg.BootLimitMax {
		return bad("boot-limit-min", "(%s) must not be above --boot-limit-max (%s)", text("boot-limit-min"), text("boot-limit-max"))
	}
	if cfg.LogFormat != "text" && cfg.LogFormat != "json" {
		return bad("log-format", "must be text or json, got %q", cfg.LogFormat)
	}
	return nil
}

// checkHostPort accepts "host:port" and ":port" with a port in 0..65535.
func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("missing or malformed port")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// readToken returns the operator token: the trimmed contents of path when
// set, else the trimmed env MCRIB_TOKEN, else "". src is the --token-file
// value, for the error messages.
func readToken(path string, src *flagValue, getenv func(string) string) (string, error) {
	if path == "" {
		return strings.TrimSpace(getenv("MCRIB_TOKEN")), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("--token-file %q cannot be read: %v%s", path, err, src.from())
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("--token-file %q is empty%s", path, src.from())
	}
	if strings.ContainsAny(token, "\r\n") {
		return "", fmt.Errorf("--token-file %q must hold the token on one line%s", path, src.from())
	}
	return token, nil
}
