package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// command is one `mcrib` command: how it is called, how it is described in
// the top-level usage and in its own help, and what it runs.
type command struct {
	name    string
	aliases []string
	// synopsis holds the command's lines of the top-level usage: a form of
	// the command and what that form does.
	synopsis []synopsisLine
	// usage is printed by `mcrib help <name>`, by `mcrib <name> -h` and
	// after a usage error; help, when set, replaces it for the first two.
	usage string
	help  func(w io.Writer)
	// run runs the command with the arguments after its name. It returns
	// nil on success, an error matching flag.ErrHelp after -h, an
	// *exitError for an exit code other than 1, or any other error for 1.
	run func(c cli, ctx context.Context, args []string) error
}

// synopsisLine is one line of the top-level usage.
type synopsisLine struct{ form, what string }

// addrUsage is the flag every client command takes, as its usage shows it.
const addrUsage = "[--addr URL]"

// commands returns the mcrib commands in the order the usage lists them.
// It is the one list of commands: run dispatches through it, and the usage
// text and the help are made from it.
func commands() []command {
	return []command{
		{name: "serve", run: cli.serve, help: printServeHelp,
			usage:    "usage: mcrib serve [flags]",
			synopsis: []synopsisLine{{"serve", "run the control plane (mcrib serve -h lists its flags)"}}},
		{name: "status", run: cli.status,
			usage:    "usage: mcrib status [--json] " + addrUsage,
			synopsis: []synopsisLine{{"status [--json]", "print the status of a running server"}}},
		{name: "slots", run: cli.slots,
			usage:    "usage: mcrib slots [--json] " + addrUsage,
			synopsis: []synopsisLine{{"slots [--json]", "print the slot map"}}},
		{name: "freeze", run: cli.freeze,
			usage:    "usage: mcrib freeze --reason TEXT " + addrUsage,
			synopsis: []synopsisLine{{"freeze --reason TEXT", "freeze membership changes"}}},
		{name: "unfreeze", run: cli.unfreeze,
			usage:    "usage: mcrib unfreeze " + addrUsage,
			synopsis: []synopsisLine{{"unfreeze", "lift the freeze"}}},
		{name: "ratelimit", run: cli.ratelimit,
			usage: "usage: mcrib ratelimit [--json] " + addrUsage + "\n" +
				"       mcrib ratelimit set N [--burst B] [--json] " + addrUsage + "\n" +
				"       mcrib ratelimit auto [--burst B] [--json] " + addrUsage,
			synopsis: []synopsisLine{
				{"ratelimit [--json]", "print the boot limit"},
				{"ratelimit set N [--burst B]", "pin the boot limit to N boots/s"},
				{"ratelimit auto", "hand the boot limit back to the controller"},
			}},
		{name: "zones", run: cli.zones,
			usage:    "usage: mcrib zones [--json] " + addrUsage,
			synopsis: []synopsisLine{{"zones [--json]", "print one line per zone: nodes, slots, unreachable, hit rate, drain"}}},
		{name: "drain", run: cli.drain,
			usage: "usage: mcrib drain ZONE --reason TEXT [--percent P] [--step S] [--every D] " + addrUsage + "\n\n" +
				"Move P% (1-100, default 100) of ZONE's slots to the other zones, S% (1-100,\n" +
				"default 10) per step, one step every D (1s-1h, default 30s); a flag left out\n" +
				"keeps the server's default. mcrib undrain ZONE gives the slots back.",
			synopsis: []synopsisLine{{"drain ZONE --reason TEXT [--percent P] [--step S] [--every D]", "drain a zone gradually"}}},
		{name: "undrain", run: cli.undrain,
			usage:    "usage: mcrib undrain ZONE " + addrUsage,
			synopsis: []synopsisLine{{"undrain ZONE", "give a drained zone its slots back, at the same pace"}}},
		{name: "replace", run: cli.replace,
			usage:    "usage: mcrib replace NODE --reason TEXT " + addrUsage,
			synopsis: []synopsisLine{{"replace NODE --reason TEXT", "move a node's slot to a spare, warm"}}},
		{name: "events", run: cli.events, usage: eventsUsage, synopsis: []synopsisLine{{"events [--follow]", "print mcrib's latest decisions and why"}}},
		{name: "sim", run: cli.sim, help: printSimHelp, usage: simUsage,
			synopsis: []synopsisLine{{"sim [flags]", "simulate scenarios on mcrib's own code (mcrib sim -h lists its flags)"}}},
		{name: "version", run: cli.version,
			usage:    "usage: mcrib version",
			synopsis: []synopsisLine{{"version", "print the version"}}},
		{name: "help", aliases: []string{"-h", "-help", "--help"}, run: cli.help,
			usage:    "usage: mcrib help [command]",
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

// printHelp writes the help of cmd to w.
func (cmd command) printHelp(w io.Writer) {
	if cmd.help != nil {
		cmd.help(w)
		return
	}
	fmt.Fprintln(w, cmd.usage)
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
The client commands take --addr URL (default http://127.0.0.1:7070, env
MCRIB_ADDR) and send the token from env MCRIB_TOKEN when it is set. They exit
0 on success, 1 when the server answers with an error or cannot be reached,
and 2 on a usage error.
`)
	return b.String()
}

// help prints the top-level usage, or the help of one command.
func (c cli) help(_ context.Context, args []string) error {
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
		fmt.Fprintf(c.stderr, "mcrib help: unknown command %q\n\n%s", args[0], usageText())
		return reported(2)
	}
	cmd.printHelp(c.stdout)
	return nil
}
