package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"strings"
	"testing"
)

// TestCommandTable checks that the one command list drives dispatch, the
// top-level usage and the help alike.
func TestCommandTable(t *testing.T) {
	usage := usageText()
	seen := map[string]bool{}
	for _, cmd := range commands() {
		for _, name := range append([]string{cmd.name}, cmd.aliases...) {
			if seen[name] {
				t.Errorf("command name %q appears twice", name)
			}
			seen[name] = true
			if got, ok := lookupCommand(name); !ok || got.name != cmd.name {
				t.Errorf("lookupCommand(%q) = %q, %v; want %q", name, got.name, ok, cmd.name)
			}
		}
		if cmd.run == nil || cmd.usage == "" || len(cmd.synopsis) == 0 {
			t.Errorf("command %q lacks a run func, a usage or a synopsis", cmd.name)
		}
		for _, l := range cmd.synopsis {
			if !strings.Contains(usage, "\n  "+l.form) || !strings.Contains(usage, " "+l.what+"\n") {
				t.Errorf("the usage does not list %q (%s):\n%s", l.form, l.what, usage)
			}
		}
		code, help, stderr := runCLI(t, nil, "help", cmd.name)
		if code != 0 || !strings.HasPrefix(help, cmd.usage+"\n") || stderr != "" {
			t.Errorf("mcrib help %s: exit %d, stdout %q, stderr %q; want 0 and the help, starting with the usage", cmd.name, code, help, stderr)
		}
		if cmd.name == "help" {
			continue
		}
		code, stdout, stderr := runCLI(t, nil, cmd.name, "-h")
		if code != 0 || stdout != help || stderr != "" {
			t.Errorf("mcrib %s -h: exit %d, stdout %q, stderr %q; want 0 and mcrib help %s's %q", cmd.name, code, stdout, stderr, cmd.name, help)
		}
		if code, stdout, _ := runCLI(t, nil, cmd.name, "--help"); code != 0 || stdout != help {
			t.Errorf("mcrib %s --help: exit %d, stdout %q; want 0 and mcrib help %s's", cmd.name, code, stdout, cmd.name)
		}
	}
	if _, ok := lookupCommand("restart"); ok {
		t.Errorf("lookupCommand found a command that does not exist")
	}
	// A form wider than its column goes on a line of its own.
	if want := "  ratelimit set N [--burst B]\n                           pin the boot limit to N boots/s\n"; !strings.Contains(usage, want) {
		t.Errorf("usage does not wrap the long form as %q:\n%s", want, usage)
	}
	if want := "  version [--json]         print the version\n"; !strings.Contains(usage, want) {
		t.Errorf("usage does not align %q:\n%s", want, usage)
	}
}

// TestExitCode checks how a command's error becomes the exit code and
// what it prints.
func TestExitCode(t *testing.T) {
	cmd, _ := lookupCommand("status")
	tests := []struct {
		name                string
		err                 error
		code                int
		wantOut, wantErrOut string
	}{
		{name: "success", err: nil, code: 0},
		{name: "help", err: flag.ErrHelp, code: 0, wantOut: cmd.usage + "\n\n" + cmd.about + "\n\nexamples:\n  mcrib status\n" +
			"  mcrib status --addr https://10.0.0.12:7070    # ask a follower\n  mcrib status --json | jq .nodes               # the raw status document\n"},
		{name: "failure", err: errors.New("boom"), code: 1, wantErrOut: "mcrib status: boom\n"},
		{name: "server error", err: &serverError{status: "409 Conflict", message: "no"}, code: 1, wantErrOut: "mcrib status: no (409 Conflict)\n"},
		{name: "usage error", err: usageError("bad %q", "x"), code: 2,
			wantErrOut: "mcrib status: bad \"x\"\n" + cmd.usage + "\n(mcrib help status lists its flags, with an example)\n"},
		{name: "bad flag", err: badFlag(errors.New("--hold must not be negative")), code: 2, wantErrOut: "mcrib status: --hold must not be negative\n"},
		{name: "already reported", err: reported(1), code: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			c := testCLI(&out, &errOut, nil)
			if code := c.exitCode(cmd, tt.err); code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if out.String() != tt.wantOut || errOut.String() != tt.wantErrOut {
				t.Errorf("stdout %q stderr %q, want %q and %q", out.String(), errOut.String(), tt.wantOut, tt.wantErrOut)
			}
		})
	}
}

// TestServeCannotListen checks that runServe's failure to start reaches the
// exit code as 1, with one line naming --listen.
func TestServeCannotListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--listen", ln.Addr().String(), "--consul", "127.0.0.1:1"}, &stdout, &stderr, envOf(nil))
	if code != 1 {
		t.Errorf("exit code %d, want 1 (stderr %q)", code, stderr.String())
	}
	if out := stderr.String(); !strings.HasPrefix(out, "mcrib serve: --listen: ") || strings.Count(out, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting with %q", out, "mcrib serve: --listen: ")
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
}

// TestCommandHelpListsFlags checks that `mcrib help CMD` lists every flag
// the command takes, each with its usage, and ends with examples.
func TestCommandHelpListsFlags(t *testing.T) {
	for _, cmd := range commands() {
		if cmd.help != nil || cmd.name == "help" {
			continue // serve and sim list their flags their own way (tested with them)
		}
		var hr *helpRequest
		err := cmd.run(testCLI(io.Discard, io.Discard, nil), context.Background(), []string{"--help"})
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("mcrib %s --help returned %v, want a help request", cmd.name, err)
			continue
		}
		_, help, _ := runCLI(t, nil, "help", cmd.name)
		if errors.As(err, &hr) {
			hr.fs.VisitAll(func(f *flag.Flag) {
				_, usage := flag.UnquoteUsage(f)
				if !strings.Contains(help, "  --"+f.Name+" ") || !strings.Contains(help, usage) {
					t.Errorf("mcrib help %s does not list --%s (%s):\n%s", cmd.name, f.Name, usage, help)
				}
			})
		} else if cmd.client {
			t.Errorf("mcrib %s --help carries no flags", cmd.name)
		}
		if !strings.Contains(help, "\nexamples:\n  mcrib "+cmd.name) || cmd.about == "" {
			t.Errorf("mcrib help %s has no paragraph or no example:\n%s", cmd.name, help)
		}
	}
}

// TestDocListsEveryCommand checks that the package documentation (doc.go)
// names every command of the command table, and no command that is not in
// it.
func TestDocListsEveryCommand(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	for _, cmd := range commands() {
		if !strings.Contains(doc, "\n//\tmcrib "+cmd.name+" ") && !strings.Contains(doc, "\n//\tmcrib "+cmd.name+"\n") {
			t.Errorf("doc.go does not list %q as a line \"//\\tmcrib %s …\"", cmd.name, cmd.name)
		}
	}
	for _, line := range strings.Split(doc, "\n") {
		rest, ok := strings.CutPrefix(line, "//\tmcrib ")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, " ")
		if _, known := lookupCommand(name); !known {
			t.Errorf("doc.go lists %q, which is no command", name)
		}
	}
}
