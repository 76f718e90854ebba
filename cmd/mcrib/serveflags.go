package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// serveFlag describes one `mcrib serve` flag: its name, its help, its
// default, and the typed flag that fills its field of a serveConfig.
type serveFlag struct {
	name  string
	arg   string // placeholder for the value in the help text
	usage string
	// def is the default, read as a value given on the command line would
	// be; "" means none.
	def string
	// defaultFn, when set, computes the default from the environment
	// (used by --consul for $CONSUL_HTTP_ADDR).
	defaultFn func(getenv func(string) string) string
	// defaultHelp, when set, replaces def in the help text.
	defaultHelp string
	define      flagDefiner
}

// flagDefiner defines a flag on fs as a typed flag bound to its field of
// cfg, and returns why a value of its type that does not parse is wrong
// (nil for a text flag, which takes any value).
type flagDefiner func(fs *flag.FlagSet, cfg *serveConfig, name, usage string) (notA error)

func textFlag(field func(*serveConfig) *string) flagDefiner {
	return func(fs *flag.FlagSet, cfg *serveConfig, name, usage string) error {
		fs.StringVar(field(cfg), name, "", usage)
		return nil
	}
}

// boolFlag defines a switch: given alone it is true; from the environment
// it takes the strconv.ParseBool spellings (true, 1, false, 0…).
func boolFlag(field func(*serveConfig) *bool) flagDefiner {
	return func(fs *flag.FlagSet, cfg *serveConfig, name, usage string) error {
		fs.BoolVar(field(cfg), name, false, usage)
		return errNotBool
	}
}

func durationFlag(field func(*serveConfig) *time.Duration) flagDefiner {
	return func(fs *flag.FlagSet, cfg *serveConfig, name, usage string) error {
		fs.DurationVar(field(cfg), name, 0, usage)
		return errNotDuration
	}
}

func intFlag(field func(*serveConfig) *int) flagDefiner {
	return func(fs *flag.FlagSet, cfg *serveConfig, name, usage string) error {
		fs.IntVar(field(cfg), name, 0, usage)
		return errNotInteger
	}
}

func floatFlag(field func(*serveConfig) *float64) flagDefiner {
	return func(fs *flag.FlagSet, cfg *serveConfig, name, usage string) error {
		fs.Float64Var(field(cfg), name, 0, usage)
		return errNotNumber
	}
}

// serveFlags returns the `mcrib serve` flags in the order of docs/cli.md,
// "mcrib serve flags".
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
			define:      textFlag(func(c *serveConfig) *string { return &c.Consul })},
		{name: "service", def: "memcached", arg: "NAME", usage: "Consul service whose instances are the cache nodes",
			define: textFlag(func(c *serveConfig) *string { return &c.Service })},
		{name: "tag", arg: "TAG", usage: "only instances carrying this tag",
			define: textFlag(func(c *serveConfig) *string { return &c.Tag })},
		{name: "pool", def: "default", arg: "NAME", usage: "pool name; one mcrib process manages one pool",
			define: textFlag(func(c *serveConfig) *string { return &c.Pool })},
		{name: "slots", def: "16", arg: "N", usage: "number of slots, a power of two from 1 to 4096; fixed for the life of the pool",
			define: intFlag(func(c *serveConfig) *int { return &c.Slots })},
		{name: "kv-prefix", def: "mcrib", arg: "PREFIX", usage: "Consul KV prefix for all state",
			define: textFlag(func(c *serveConfig) *string { return &c.KVPrefix })},
		{name: "listen", def: "127.0.0.1:7070", arg: "HOST:PORT", usage: "operator HTTP API address",
			define: textFlag(func(c *serveConfig) *string { return &c.Listen })},
		{name: "advertise-addr", arg: "HOST:PORT", usage: "address other replicas and applications reach this process at, its leader_id (default: --listen, or with a wildcard --listen this host's first non-loopback address and the listen port)",
			define: textFlag(func(c *serveConfig) *string { return &c.AdvertiseAddr })},
		{name: "insecure-no-token", arg: "", usage: "allow a non-loopback --listen without a token (otherwise refused)", defaultHelp: "off",
			define: boolFlag(func(c *serveConfig) *bool { return &c.InsecureNoToken })},
		{name: "tls-cert", arg: "PATH", usage: "PEM certificate (chain) to serve the API over TLS; replicas then forward to each other over TLS",
			define: textFlag(func(c *serveConfig) *string { return &c.TLSCert })},
		{name: "tls-key", arg: "PATH", usage: "PEM private key of --tls-cert",
			define: textFlag(func(c *serveConfig) *string { return &c.TLSKey })},
		{name: "token-file", arg: "PATH", usage: "file holding the operator bearer token; env MCRIB_TOKEN also works",
			define: textFlag(func(c *serveConfig) *string { return &c.TokenFile })},
		{name: "hold", def: "60s", arg: "DURATION", usage: "how long a serving node may be absent and unreachable before its slot goes to a spare",
			define: durationFlag(func(c *serveConfig) *time.Duration { return &c.Hold })},
		{name: "probe-interval", def: "2s", arg: "DURATION", usage: "how often each memcached node is probed directly",
			define: durationFlag(func(c *serveConfig) *time.Duration { return &c.ProbeInterval })},
		{name: "flush-after-unreachable", def: "0s", arg: "DURATION", usage: "flush a slot holder unreachable for longer than this when it answers again (0s: any unreachability)",
			define: durationFlag(func(c *serveConfig) *time.Duration { return &c.FlushAfterUnreachable })},
		{name: "max-absent-fraction", def: "0.25", arg: "FRACTION", usage: "above this fraction of serving nodes absent at once, replacements stop",
			define: floatFlag(func(c *serveConfig) *float64 { return &c.MaxAbsentFraction })},
		{name: "max-replacements-per-minute", def: "2", arg: "N", usage: "ceiling on slot replacements",
			define: intFlag(func(c *serveConfig) *int { return &c.MaxReplacementsPerMinute })},
		{name: "stats-interval", def: "5s", arg: "DURATION", usage: "how often memcached stats are read for the hit rate",
			define: durationFlag(func(c *serveConfig) *time.Duration { return &c.StatsInterval })},
		{name: "boot-limit-max", def: "1000", arg: "BOOTS/S", usage: "ceiling of the boot limit",
			define: floatFlag(func(c *serveConfig) *float64 { return &c.BootLimitMax })},
		{name: "boot-limit-min", def: "10", arg: "BOOTS/S", usage: "floor of the boot limit in automatic mode",
			define: floatFlag(func(c *serveConfig) *float64 { return &c.BootLimitMin })},
		{name: "hit-rate-target", def: "0.90", arg: "FRACTION", usage: "hit rate at and above which the boot limit may rise",
			define: floatFlag(func(c *serveConfig) *float64 { return &c.HitRateTarget })},
		{name: "hit-rate-low", def: "0.80", arg: "FRACTION", usage: "hit rate below which the boot limit is cut (a fast fall below --hit-rate-target may cut too)",
			define: floatFlag(func(c *serveConfig) *float64 { return &c.HitRateLow })},
		{name: "mcrouter-config", arg: "PATH", usage: "mcrouter JSON config kept in step with the slot map",
			define: textFlag(func(c *serveConfig) *string { return &c.McrouterConfig })},
		{name: "twemproxy-config", arg: "PATH", usage: "twemproxy (nutcracker) YAML config kept in step with the slot map",
			define: textFlag(func(c *serveConfig) *string { return &c.TwemproxyConfig })},
		{name: "twemproxy-listen", def: "127.0.0.1:22121", arg: "HOST:PORT", usage: "the listen address written into the twemproxy pool",
			define: textFlag(func(c *serveConfig) *string { return &c.TwemproxyListen })},
		{name: "warm-for", def: "30m", arg: "DURATION", usage: "the longest a planned move keeps the old holder as the warm source of its slot (it ends sooner once the new holder is warm); 0s makes every move cold",
			define: durationFlag(func(c *serveConfig) *time.Duration { return &c.WarmFor })},
		{name: "warm-min", def: "30s", arg: "DURATION", usage: "the shortest warming: none ends by convergence sooner (above --warm-for: --warm-for)",
			define: durationFlag(func(c *serveConfig) *time.Duration { return &c.WarmMin })},
		{name: "warm-copy-rate", def: "20MB", arg: "BYTES", usage: "bytes a second the leader may copy from one warm source into its new holder (like 20MB or 512kB); 0 turns the copy off",
			define: bytesFlag(func(c *serveConfig) *int64 { return &c.WarmCopyRate })},
		{name: "warm-ttl", def: "1h", arg: "DURATION", usage: "expiry of a value copied from the old holder into the new one (at most 720h, memcached's relative expiry)",
			define: durationFlag(func(c *serveConfig) *time.Duration { return &c.WarmTTL })},
		{name: "log-format", def: "text", arg: "FORMAT", usage: "log format: text or json",
			define: textFlag(func(c *serveConfig) *string { return &c.LogFormat })},
	}
}

// envName returns the environment variable that may carry the flag name.
func envName(flagName string) string {
	return "MCRIB_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
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
