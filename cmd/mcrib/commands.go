package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// command is one `mcrib` command: how it is called, how it is described in
// the top-level usage and in its own help, and what it runs.
type command struct {
	name    string
	aliases []string
	// client is set for the commands that talk to a running mcrib: they
	// take the client flags (clientOptions), also before their name.
	client bool
	// synopsis holds the command's lines of the top-level usage: a form of
	// the command and what that form does.
	synopsis []synopsisLine
	// usage is the usage line(s), printed first in the help and after a
	// usage error.
	usage string
	// about is the help's paragraph on what the command does; examples
	// are command lines, each with its comment, that the help ends with.
	about    string
	examples []string
	// help, when set, writes the whole help instead (serve and sim list
	// their flags their own way).
	help func(w io.Writer)
	// run runs the command with the arguments after its name. It returns
	// nil on success, an error matching flag.ErrHelp after -h (a
	// *helpRequest carrying its flags when it has any), an *exitError for
	// an exit code other than 1, or any other error for 1. After -h or
	// --help it returns before it does anything else, so that the help
	// can ask it for its flags.
	run func(c proc, ctx context.Context, args []string) error
}

// synopsisLine is one line of the top-level usage.
type synopsisLine struct{ form, what string }

// clientUsage stands for the client flags in a usage line.
const clientUsage = "[client flags]"

// commands returns the mcrib commands in the order the usage lists them.
// It is the one list of commands: run dispatches through it, and the usage
// text, the help and the package documentation (doc.go, checked by a test)
// are made from it.
func commands() []command {
	return []command{
		{name: "serve", run: proc.serve, help: printServeHelp,
			usage:    "usage: mcrib serve [flags]",
			synopsis: []synopsisLine{{"serve", "run the control plane (mcrib serve -h lists its flags)"}}},
		{name: "status", run: proc.status, client: true,
			usage:    "usage: mcrib status [--json] " + clientUsage,
			synopsis: []synopsisLine{{"status [--json]", "print the status of a running server"}},
			about: "Print the pool as the server sees it: the leader, the freeze, how long ago the\n" +
				"last reconcile was, the hit rate and the boot limit, then one line per node and\n" +
				"what each waits for, and the zones.",
			examples: []string{
				"mcrib status",
				"mcrib status --addr https://10.0.0.12:7070    # ask a follower",
				"mcrib status --json | jq .nodes               # the raw status document",
			}},
		{name: "slots", run: proc.slots, client: true,
			usage:    "usage: mcrib slots [--json] " + clientUsage,
			synopsis: []synopsisLine{{"slots [--json]", "print the slot map"}},
			about:    "Print the slot map: which node holds each slot, the warm sources, and the spares.",
			examples: []string{"mcrib slots"}},
		{name: "freeze", run: proc.freeze, client: true,
			usage:    "usage: mcrib freeze --reason TEXT [--force] " + clientUsage,
			synopsis: []synopsisLine{{"freeze --reason TEXT", "freeze membership changes"}},
			about: "Freeze membership changes: no slot changes hands (drains, returns and\n" +
				"replacements pause) until mcrib unfreeze. The reason and your name (--who) are\n" +
				"stored with the freeze and shown to everyone. A freeze that another operator\n" +
				"set is refused, so that their reason is not lost: --force replaces it.",
			examples: []string{
				`mcrib freeze --reason "deploy of web 1.42, until 15:00"`,
				`mcrib freeze --force --reason "incident 4711: zone b flapping"   # over another operator's freeze`,
			}},
		{name: "unfreeze", run: proc.unfreeze, client: true,
			usage:    "usage: mcrib unfreeze " + clientUsage,
			synopsis: []synopsisLine{{"unfreeze", "lift the freeze"}},
			about:    "Lift the freeze, whoever set it.",
			examples: []string{"mcrib unfreeze"}},
		{name: "ratelimit", run: proc.ratelimit, client: true,
			usage: "usage: mcrib ratelimit [--json] " + clientUsage + "\n" +
				"       mcrib ratelimit set N [--burst B] [--json] " + clientUsage + "\n" +
				"       mcrib ratelimit auto [--burst B] [--json] " + clientUsage,
			synopsis: []synopsisLine{
				{"ratelimit [--json]", "print the boot limit"},
				{"ratelimit set N [--burst B]", "pin the boot limit to N boots/s"},
				{"ratelimit auto", "hand the boot limit back to the controller"},
			},
			about: "Print the boot limit (how many client boots a second the pool admits), pin it\n" +
				"to N boots/s (the controller leaves it alone), or hand it back to the\n" +
				"controller, which follows the hit rate.",
			examples: []string{
				"mcrib ratelimit",
				"mcrib ratelimit set 50 --burst 10",
				"mcrib ratelimit auto",
			}},
		{name: "zones", run: proc.zones, client: true,
			usage:    "usage: mcrib zones [--json] " + clientUsage,
			synopsis: []synopsisLine{{"zones [--json]", "print one line per zone: nodes, slots, unreachable, hit rate, drain"}},
			about:    "Print one line per zone: nodes, slots held, unreachable and absent nodes, hit\nrate and drain, then the zone alert when there is one.",
			examples: []string{"mcrib zones", "mcrib zones --json"}},
		{name: "drain", run: proc.drain, client: true,
			usage: "usage: mcrib drain ZONE --reason TEXT [--percent P] [--step S] [--every D] [--dry-run] " + clientUsage,
			about: "Move P% (1-100, default 100) of ZONE's slots to the other zones, S% (1-100,\n" +
				"default 10) per step, one step every D (1s-1h, default 30s); a flag left out\n" +
				"keeps the server's default. Each move warms the new holder from the old one.\n" +
				"mcrib undrain ZONE gives the slots back. --dry-run prints what the simulator\n" +
				"predicts the drain will cost (duration, lowest hit rate, extra misses, lowest\n" +
				"boot limit) and starts nothing; --reason is then optional.",
			synopsis: []synopsisLine{{"drain ZONE --reason TEXT [--percent P] [--step S] [--every D]", "drain a zone gradually"}},
			examples: []string{
				`mcrib drain b --reason "link to b flapping"`,
				`mcrib drain b --reason "half of b, slowly" --percent 50 --step 5 --every 1m`,
				"mcrib drain b --dry-run --step 20 --every 10s",
			}},
		{name: "undrain", run: proc.undrain, client: true,
			usage:    "usage: mcrib undrain ZONE " + clientUsage,
			synopsis: []synopsisLine{{"undrain ZONE", "give a drained zone its slots back, at the same pace"}},
			about:    "Give a drained zone back the slots its drain moved off it, at the drain's pace;\nits drain entry goes when it holds its baseline again.",
			examples: []string{"mcrib undrain b"}},
		{name: "replace", run: proc.replace, client: true,
			usage:    "usage: mcrib replace NODE --reason TEXT " + clientUsage,
			synopsis: []synopsisLine{{"replace NODE --reason TEXT", "move a node's slot to a spare, warm"}},
			about: "Move NODE's slot to a spare now, warming the spare from NODE while it answers.\n" +
				"It counts against --max-replacements-per-minute and is refused while frozen.",
			examples: []string{`mcrib replace mc-3 --reason "host retired"`}},
		{name: "resize", run: proc.resize, client: true,
			usage: "usage: mcrib resize [--slots N --reason TEXT [--step S] [--every D] [--dry-run] | stop] " + clientUsage,
			about: "Print the resize under way, if any. With --slots N (twice the pool's slots,\n" +
				"at most 4096) start doubling the pool: every key stays on its memcached, and\n" +
				"then S% (1-100, default 10) of the new slots split off to spares every D\n" +
				"(1s-1h, default 30s), each warmed from the node it leaves. --slots with the\n" +
				"pool's own count resumes a stopped resize; mcrib resize stop stops splitting.\n" +
				"--dry-run prints what the simulator predicts the resize will cost and starts\n" +
				"nothing.",
			synopsis: []synopsisLine{{"resize [--slots N --reason TEXT | stop]", "print, start or stop the doubling of the pool's slots"}},
			examples: []string{
				"mcrib resize",
				`mcrib resize --slots 32 --reason "grown past its slots"`,
				`mcrib resize --slots 32 --reason "slowly" --step 5 --every 1m`,
				"mcrib resize --slots 32 --dry-run",
				"mcrib resize stop",
			}},
		{name: "roll", run: proc.roll, client: true,
			usage: "usage: mcrib roll [--zone Z | --nodes A,B | --all --reason TEXT [--restart-timeout D] [--exec CMD] | stop] " + clientUsage,
			about: "Print the roll under way, if any. With --zone, --nodes or --all restart those\n" +
				"nodes one at a time without a cold key: each holder's slot moves warm to a spare\n" +
				"first, then the node is released and mcrib waits (up to --restart-timeout,\n" +
				"10s-1h, default 10m) for its memcached to restart. With --exec the command stays\n" +
				"in the foreground and runs CMD through sh -c for each released node\n" +
				"(MCRIB_NODE_ID, MCRIB_NODE_ADDR, MCRIB_NODE_AZ set), killed at the restart\n" +
				"timeout; it exits 0 when the roll is done, 1 when it is blocked or stopped, and\n" +
				"a CMD that fails or a signal stops the roll first. mcrib roll stop stops it.",
			synopsis: []synopsisLine{{"roll [--zone Z | --nodes A,B | --all --reason TEXT | stop]", "print, start or stop a rolling restart"}},
			examples: []string{
				"mcrib roll",
				`mcrib roll --zone a --reason "memcached 1.6.38"`,
				`mcrib roll --all --reason "kernel patch" --exec 'ssh "$MCRIB_NODE_ID" sudo systemctl restart memcached'`,
				"mcrib roll stop",
			}},
		{name: "events", run: proc.events, client: true, usage: eventsUsage,
			synopsis: []synopsisLine{{"events [--follow]", "print mcrib's latest decisions and why"}},
			about:    "Print mcrib's latest decisions and the operators' changes, with who made them\nand why; --follow keeps printing new ones until interrupted.",
			examples: []string{"mcrib events", "mcrib events --follow"}},
		{name: "sim", run: proc.sim, help: printSimHelp, usage: simUsage,
			synopsis: []synopsisLine{{"sim [flags]", "simulate scenarios on mcrib's own code (mcrib sim -h lists its flags)"}}},
		{name: "version", run: proc.version,
			usage:    "usage: mcrib version [--json]",
			about:    "Print the version of this mcrib binary (--json: with the Go release it was built\nwith, as JSON).",
			examples: []string{"mcrib version", "mcrib version --json"},
			synopsis: []synopsisLine{{"version [--json]", "print the version"}}},
		{name: "help", aliases: []string{"-h", "-help", "--help"}, run: proc.help,
			usage:    "usage: mcrib help [command]",
			about:    "Print the list of commands, or the help of one command: its flags and examples.",
			examples: []string{"mcrib help drain"},
			synopsis: []synopsisLine{{"help [command]", "print this text, or the help of one command"}}},
	}
}

// lookupCommand returns the command called name, by its name or an alias.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
		for _, a := range c.aliases {
			if a == name {
				return c, true
			}
		}
	}
	return command{}, false
}

// commandNames returns the names of the commands, without aliases.
func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// printHelp writes the help of cmd to w: the usage, what it does, its
// flags (those of fs, nil for none), then the client flags, and examples.
func (cmd command) printHelp(w io.Writer, fs *flag.FlagSet) {
	if cmd.help != nil {
		cmd.help(w)
		return
	}
	fmt.Fprintln(w, cmd.usage)
	if cmd.about != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.about)
	}
	if fs != nil {
		var own, common []*flag.Flag
		fs.VisitAll(func(f *flag.Flag) {
			if known, _ := isClientFlag(f.Name); known && cmd.client {
				common = append(common, f)
			} else {
				own = append(own, f)
			}
		})
		printFlags(w, "flags:", own)
		printFlags(w, "client flags (also before the command, as in mcrib --addr URL "+cmd.name+"):", common)
	}
	if len(cmd.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, e := range cmd.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// printFlags writes a titled list of flags, one a line with its value's
// name and usage; nothing when there are none.
func printFlags(w io.Writer, title string, flags []*flag.Flag) {
	if len(flags) == 0 {
		return
	}
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range flags {
		name, usage := flag.UnquoteUsage(f)
		if isBoolFlag(f) {
			name = ""
		} else if name == "" || name == "value" || name == "string" {
			name = "TEXT"
		} else if name == "int" {
			name = "N"
		}
		form := "--" + f.Name
		if name != "" {
			form += " " + name
		}
		fmt.Fprintf(tw, "  %s\t%s\n", form, usage)
	}
	tw.Flush()
}

// synopsisWidth is the width of the form column of the top-level usage.
const synopsisWidth = 24

// usageText returns the top-level help text.
func usageText() string {
	var b strings.Builder
	b.WriteString("usage: mcrib <command> [flags]\n\ncommands:\n")
	for _, c := range commands() {
		for _, l := range c.synopsis {
			if len(l.form) > synopsisWidth {
				fmt.Fprintf(&b, "  %s\n  %*s %s\n", l.form, synopsisWidth, "", l.what)
				continue
			}
			fmt.Fprintf(&b, "  %-*s %s\n", synopsisWidth, l.form, l.what)
		}
	}
	b.WriteString(`
The client commands (status to events) take the client flags, after the
command or before it: --addr URL (default http://127.0.0.1:7070, env
MCRIB_ADDR), --token-file FILE (env MCRIB_TOKEN_FILE, or the token itself in
env MCRIB_TOKEN), --who NAME (default $USER@host, env MCRIB_WHO) and --json.
They exit 0 on success, 1 when the server answers with an error or cannot be
reached, and 2 on a usage error. mcrib help <command> prints a command's
flags and examples.
`)
	return b.String()
}

// help prints the top-level usage, or the help of one command.
func (c proc) help(ctx context.Context, args []string) error {
	switch {
	case len(args) == 0:
		fmt.Fprint(c.stdout, usageText())
		return nil
	case len(args) > 1:
		fmt.Fprintf(c.stderr, "mcrib help: too many arguments\n\n%s", usageText())
		return reported(2)
	}
	cmd, ok := lookupCommand(args[0])
	if !ok {
		if hint := didYouMean(args[0], commandNames(), ""); hint != "" {
			fmt.Fprintf(c.stderr, "mcrib help: unknown command %q%s\n", args[0], hint)
			return reported(2)
		}
		fmt.Fprintf(c.stderr, "mcrib help: unknown command %q\n\n%s", args[0], usageText())
		return reported(2)
	}
	c.printCommandHelp(ctx, cmd, c.stdout)
	return nil
}

// printCommandHelp writes the help of cmd to w, with the flags cmd itself
// defines: it runs cmd with --help, which every command answers before it
// does anything else, and lists the flags its answer carries.
func (c proc) printCommandHelp(ctx context.Context, cmd command, w io.Writer) {
	var fs *flag.FlagSet
	if cmd.name != "help" {
		var hr *helpRequest
		if errors.As(cmd.run(c, ctx, []string{"--help"}), &hr) {
			fs = hr.fs
		}
	}
	cmd.printHelp(w, fs)
}
