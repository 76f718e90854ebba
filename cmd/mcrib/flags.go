package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// maxSlots is the largest --slots value mcrib accepts. A slot map far larger
// than any cache fleet only wastes memory and makes the mcrouter config huge.
const maxSlots = 65536

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
	TokenFile                string        // --token-file: path the token was read from ("" = none)
	Token                    string        // operator bearer token from --token-file or MCRIB_TOKEN ("" = no auth)
	Hold                     time.Duration // --hold
	ProbeInterval            time.Duration // --probe-interval (> 0)
	FlushAfterUnreachable    time.Duration // --flush-after-unreachable
	MaxAbsentFraction        float64       // --max-absent-fraction, 0..1
	MaxReplacementsPerMinute int           // --max-replacements-per-minute, >= 0
	StatsInterval            time.Duration // --stats-interval (> 0)
	BootLimitMax             float64       // --boot-limit-max, boots/s
	BootLimitMin             float64       // --boot-limit-min, boots/s
	HitRateTarget            float64       // --hit-rate-target, 0..1
	HitRateLow               float64       // --hit-rate-low, 0..1, <= HitRateTarget
	McrouterConfig           string        // --mcrouter-config: path of the mcrouter JSON config ("" = none)
	LogFormat                string        // --log-format: "text" or "json"
}

// serveFlag describes one `mcrib serve` flag: its name, its default as
// text, its help line, and how its text lands in a serveConfig.
type serveFlag struct {
	name  string
	def   string // default as text; "" means none
	arg   string // placeholder for the value in the help text
	usage string
	// defaultFn, when set, computes the default from the environment
	// (used by --consul for $CONSUL_HTTP_ADDR).
	defaultFn func(getenv func(string) string) string
	// defaultHelp, when set, replaces def in the help text.
	defaultHelp string
	set         func(cfg *serveConfig, text string) error
}

// envName returns the environment variable that may carry the flag name.
func envName(flagName string) string {
	return "MCRIB_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// errNotDuration and its siblings describe why a value does not parse; they
// end up after the flag and value in the one-line error.
var (
	errNotDuration = errors.New("not a duration (like 45s, 2m or 1m30s)")
	errNotInteger  = errors.New("not a whole number")
	errNotNumber   = errors.New("not a number")
)

func setString(dst func(*serveConfig) *string) func(*serveConfig, string) error {
	return func(cfg *serveConfig, text string) error {
		*dst(cfg) = text
		return nil
	}
}

func setDuration(dst func(*serveConfig) *time.Duration) func(*serveConfig, string) error {
	return func(cfg *serveConfig, text string) error {
		d, err := time.ParseDuration(strings.TrimSpace(text))
		if err != nil {
			return errNotDuration
		}
		*dst(cfg) = d
		return nil
	}
}

func setInt(dst func(*serveConfig) *int) func(*serveConfig, string) error {
	return func(cfg *serveConfig, text string) error {
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil {
			return errNotInteger
		}
		*dst(cfg) = n
		return nil
	}
}

func setFloat(dst func(*serveConfig) *float64) func(*serveConfig, string) error {
	return func(cfg *serveConfig, text string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return errNotNumber
		}
		*dst(cfg) = f
		return nil
	}
}

// serveFlags returns the `mcrib serve` flags in the order of CONTRACT.md
// section 1.
func serveFlags() []serveFlag {
	return []serveFlag{
		{name: "consul", arg: "ADDR", usage: "Consul HTTP address",
			defaultFn: func(getenv func(string) string) string {
				if a := strings.TrimSpace(getenv("CONSUL_HTTP_ADDR")); a != "" {
					return a
				}
				return "127.0.0.1:8500"
			},
			defaultHelp: "$CONSUL_HTTP_ADDR or 127.0.0.1:8500",
			set:         setString(func(c *serveConfig) *string { return &c.Consul })},
		{name: "service", def: "memcached", arg: "NAME", usage: "Consul service whose instances are the cache nodes",
			set: setString(func(c *serveConfig) *string { return &c.Service })},
		{name: "tag", arg: "TAG", usage: "only instances carrying this tag",
			set: setString(func(c *serveConfig) *string { return &c.Tag })},
		{name: "pool", def: "default", arg: "NAME", usage: "pool name; one mcrib process manages one pool",
			set: setString(func(c *serveConfig) *string { return &c.Pool })},
		{name: "slots", def: "16", arg: "N", usage: "number of slots; fixed for the life of the pool",
			set: setInt(func(c *serveConfig) *int { return &c.Slots })},
		{name: "kv-prefix", def: "mcrib", arg: "PREFIX", usage: "Consul KV prefix for all state",
			set: setString(func(c *serveConfig) *string { return &c.KVPrefix })},
		{name: "listen", def: "127.0.0.1:7070", arg: "HOST:PORT", usage: "operator HTTP API address",
			set: setString(func(c *serveConfig) *string { return &c.Listen })},
		{name: "token-file", arg: "PATH", usage: "file holding the operator bearer token; env MCRIB_TOKEN also works",
			set: setString(func(c *serveConfig) *string { return &c.TokenFile })},
		{name: "hold", def: "60s", arg: "DURATION", usage: "how long a serving node may be absent and unreachable before its slot goes to a spare",
			set: setDuration(func(c *serveConfig) *time.Duration { return &c.Hold })},
		{name: "probe-interval", def: "2s", arg: "DURATION", usage: "how often each memcached node is probed directly",
			set: setDuration(func(c *serveConfig) *time.Duration { return &c.ProbeInterval })},
		{name: "flush-after-unreachable", def: "0s", arg: "DURATION", usage: "flush a slot holder unreachable for longer than this when it answers again (0s: any unreachability)",
			set: setDuration(func(c *serveConfig) *time.Duration { return &c.FlushAfterUnreachable })},
		{name: "max-absent-fraction", def: "0.25", arg: "FRACTION", usage: "above this fraction of serving nodes absent at once, replacements stop",
			set: setFloat(func(c *serveConfig) *float64 { return &c.MaxAbsentFraction })},
		{name: "max-replacements-per-minute", def: "2", arg: "N", usage: "ceiling on slot replacements",
			set: setInt(func(c *serveConfig) *int { return &c.MaxReplacementsPerMinute })},
		{name: "stats-interval", def: "5s", arg: "DURATION", usage: "how often memcached stats are read for the hit rate",
			set: setDuration(func(c *serveConfig) *time.Duration { return &c.StatsInterval })},
		{name: "boot-limit-max", def: "1000", arg: "BOOTS/S", usage: "ceiling of the boot limit",
			set: setFloat(func(c *serveConfig) *float64 { return &c.BootLimitMax })},
		{name: "boot-limit-min", def: "10", arg: "BOOTS/S", usage: "floor of the boot limit in automatic mode",
			set: setFloat(func(c *serveConfig) *float64 { return &c.BootLimitMin })},
		{name: "hit-rate-target", def: "0.90", arg: "FRACTION", usage: "hit rate at and above which the boot limit may rise",
			set: setFloat(func(c *serveConfig) *float64 { return &c.HitRateTarget })},
		{name: "hit-rate-low", def: "0.80", arg: "FRACTION", usage: "hit rate below which the boot limit is cut",
			set: setFloat(func(c *serveConfig) *float64 { return &c.HitRateLow })},
		{name: "mcrouter-config", arg: "PATH", usage: "mcrouter JSON config kept in step with the slot map",
			set: setString(func(c *serveConfig) *string { return &c.McrouterConfig })},
		{name: "log-format", def: "text", arg: "FORMAT", usage: "log format: text or json",
			set: setString(func(c *serveConfig) *string { return &c.LogFormat })},
	}
}

// flagSource records where a flag's value came from, for error messages.
type flagSource struct {
	text string // the value as given
	env  string // the environment variable it came from; "" for a flag or the default
}

// suffix names the environment variable a bad value came from, if any.
func (s flagSource) suffix() string {
	if s.env == "" {
		return ""
	}
	return " (from " + s.env + ")"
}

// parseServeConfig parses and validates the `mcrib serve` arguments (without
// the word "serve"). Every flag falls back to env MCRIB_<NAME> and then to its
// default; a flag given on the command line wins over the environment. The
// token comes from --token-file when set, else from env MCRIB_TOKEN. On -h or
// --help it returns an error matching flag.ErrHelp. Any other error is one
// line that names the flag and the problem.
func parseServeConfig(args []string, getenv func(string) string) (serveConfig, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	specs := serveFlags()
	fs := flag.NewFlagSet("mcrib serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	given := make(map[string]*string, len(specs))
	for _, s := range specs {
		given[s.name] = fs.String(s.name, "", s.usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return serveConfig{}, err
		}
		return serveConfig{}, fmt.Errorf("%s", dashDash(err.Error()))
	}
	if fs.NArg() > 0 {
		return serveConfig{}, fmt.Errorf("unexpected argument %q: serve takes only flags", fs.Arg(0))
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })

	var cfg serveConfig
	src := make(map[string]flagSource, len(specs))
	for _, s := range specs {
		var fsrc flagSource
		switch env := envName(s.name); {
		case onCommandLine[s.name]:
			fsrc = flagSource{text: *given[s.name]}
		case getenv(env) != "":
			fsrc = flagSource{text: getenv(env), env: env}
		case s.defaultFn != nil:
			fsrc = flagSource{text: s.defaultFn(getenv)}
		default:
			fsrc = flagSource{text: s.def}
		}
		src[s.name] = fsrc
		if err := s.set(&cfg, fsrc.text); err != nil {
			if fsrc.env != "" {
				return serveConfig{}, fmt.Errorf("invalid value %q in %s for --%s: %v", fsrc.text, fsrc.env, s.name, err)
			}
			return serveConfig{}, fmt.Errorf("invalid value %q for --%s: %v", fsrc.text, s.name, err)
		}
	}
	if err := validateServeConfig(&cfg, src); err != nil {
		return serveConfig{}, err
	}
	token, err := readToken(cfg.TokenFile, src["token-file"], getenv)
	if err != nil {
		return serveConfig{}, err
	}
	cfg.Token = token
	return cfg, nil
}

// dashDash rewrites the flag package's "-name" spelling in its error
// messages to the "--name" spelling mcrib documents.
func dashDash(msg string) string {
	for _, p := range []string{"not defined: -", "needs an argument: -", "for flag -"} {
		if i := strings.Index(msg, p); i >= 0 && !strings.HasPrefix(msg[i+len(p):], "-") {
			return msg[:i+len(p)-1] + "-" + msg[i+len(p)-1:]
		}
	}
	return msg
}

// validateServeConfig checks ranges and relations between flags and
// normalises the KV prefix. Each error is one line naming the flag.
func validateServeConfig(cfg *serveConfig, src map[string]flagSource) error {
	bad := func(name, format string, a ...any) error {
		return fmt.Errorf("--%s "+format+"%s", append(append([]any{name}, a...), src[name].suffix())...)
	}
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
	prefix := strings.Trim(strings.TrimSpace(cfg.KVPrefix), "/")
	if prefix == "" {
		return bad("kv-prefix", "must not be empty, got %q", cfg.KVPrefix)
	}
	cfg.KVPrefix = prefix
	if err := checkHostPort(cfg.Listen); err != nil {
		return bad("listen", "must be host:port, got %q: %v", cfg.Listen, err)
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
			return bad(f.name, "must be a fraction between 0 and 1, got %s", src[f.name].text)
		}
	}
	if cfg.HitRateLow > cfg.HitRateTarget {
		return bad("hit-rate-low", "(%s) must not be above --hit-rate-target (%s)",
			src["hit-rate-low"].text, src["hit-rate-target"].text)
	}
	if cfg.MaxReplacementsPerMinute < 0 {
		return bad("max-replacements-per-minute", "must not be negative, got %d", cfg.MaxReplacementsPerMinute)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"boot-limit-max", cfg.BootLimitMax}, {"boot-limit-min", cfg.BootLimitMin}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return bad(f.name, "must be a finite number, got %s", src[f.name].text)
		}
		if f.v < 0 {
			return bad(f.name, "must not be negative, got %s", src[f.name].text)
		}
	}
	if cfg.BootLimitMin > cfg.BootLimitMax {
		return bad("boot-limit-min", "(%s) must not be above --boot-limit-max (%s)",
			src["boot-limit-min"].text, src["boot-limit-max"].text)
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
// set, else the trimmed env MCRIB_TOKEN, else "".
func readToken(path string, src flagSource, getenv func(string) string) (string, error) {
	if path == "" {
		return strings.TrimSpace(getenv("MCRIB_TOKEN")), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("--token-file %q cannot be read: %v%s", path, err, src.suffix())
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("--token-file %q is empty%s", path, src.suffix())
	}
	if strings.ContainsAny(token, "\r\n") {
		return "", fmt.Errorf("--token-file %q must hold the token on one line%s", path, src.suffix())
	}
	return token, nil
}

// printServeHelp writes the `mcrib serve` help text to w.
func printServeHelp(w io.Writer) {
	fmt.Fprint(w, `usage: mcrib serve [flags]

Run the mcrib control plane for one pool. SIGINT or SIGTERM shut it down.
Every flag can also be set with env MCRIB_<NAME> (upper case, '-' as '_',
e.g. MCRIB_HOLD=45s); a flag on the command line wins over the environment.

flags:
`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range serveFlags() {
		def := s.def
		if s.defaultHelp != "" {
			def = s.defaultHelp
		}
		if def == "" {
			def = "none"
		}
		fmt.Fprintf(tw, "  --%s %s\t%s (default %s; env %s)\n", s.name, s.arg, s.usage, def, envName(s.name))
	}
	tw.Flush()
}
