// Package dashtest runs a page of the operator dashboard in headless
// chromium for tests, and queries the DOM chromium dumps: the tests of
// the dashboard against a fake API (internal/apiserver) and against a
// running mcrib (cmd/mcrib) share it. Chromium runs in a process group of
// its own, killed when it returns, on timeout and on the test's cleanup.
// A Node is a plain value.
package dashtest

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Chromium runs headless chromium (bin, as testenv finds it) with args
// after the common flags and returns its standard output. It runs in its own process group, which is
// killed when it returns, on timeout (60 s) and on cleanup.
func Chromium(t testing.TB, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000",
	}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	pgid := cmd.Process.Pid
	// Cleanups run last-in first-out: this one runs before the user data
	// directory is removed.
	t.Cleanup(func() { killGroup(t, pgid) })
	err := cmd.Wait()
	killGroup(t, pgid)
	if ctx.Err() != nil {
		t.Fatalf("chromium did not finish within 60 s; stderr:\n%s", Tail(stderr.String(), 4000))
	}
	if err != nil {
		t.Fatalf("chromium failed: %v; stderr:\n%s", err, Tail(stderr.String(), 4000))
	}
	return stdout.String()
}

// Screenshot writes a screenshot of the page at url, in a window of size
// ("width,height"), to the file shot in place of any earlier one, and
// fails the test unless it was written.
func Screenshot(t testing.TB, bin, url, shot, size string) {
	t.Helper()
	os.Remove(shot)
	Chromium(t, bin, "--screenshot="+shot, "--window-size="+size, url)
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot written to %s", shot)
}

// killGroup kills process group pgid and waits up to 5 s until none of
// its processes runs any more. Zombies count as gone: once chromium itself
// is reaped, its orphaned children are init's to reap.
func killGroup(t testing.TB, pgid int) {
	t.Helper()
	if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for groupRuns(pgid) {
		if time.Now().After(deadline) {
			t.Logf("chromium process group %d still runs 5 s after SIGKILL", pgid)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupRuns reports whether a process of group pgid is alive and not a
// zombie, reading /proc; without /proc it asks kill(2).
func groupRuns(pgid int) bool {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process ended meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// Tail returns the last n bytes of s, marked as cut when it is longer:
// for the output of a program in a failure.
func Tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// Node is an element or text node of a dumped DOM. Text nodes have an
// empty Tag and their text in Data; an element's tag and attribute names
// are lower case.
type Node struct {
	Tag      string
	Attrs    map[string]string
	Data     string
	Children []*Node
}

// ParseDOM parses chromium's --dump-dom output with encoding/xml in its
// lenient HTML mode, which is enough for the page's own markup.
func ParseDOM(t testing.TB, s string) *Node {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	root := &Node{Tag: "#document"}
	stack := []*Node{root}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parsing the dumped DOM: %v\n%s", err, Tail(s, 4000))
		}
		top := stack[len(stack)-1]
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &Node{Tag: strings.ToLower(tok.Name.Local), Attrs: map[string]string{}}
			for _, a := range tok.Attr {
				name := a.Name.Local
				if a.Name.Space != "" {
					name = a.Name.Space + ":" + name
				}
				n.Attrs[strings.ToLower(name)] = a.Value
			}
			top.Children = append(top.Children, n)
			stack = append(stack, n)
		case xml.EndElement:
			name := strings.ToLower(tok.Name.Local)
			for i := len(stack) - 1; i > 0; i-- {
				if stack[i].Tag == name {
					stack = stack[:i]
					break
				}
			}
		case xml.CharData:
			top.Children = append(top.Children, &Node{Data: string(tok)})
		}
	}
	if root.Find(func(n *Node) bool { return n.Tag == "body" }) == nil {
		t.Fatalf("the dumped DOM has no body:\n%s", Tail(s, 4000))
	}
	return root
}

// Find returns the first element below n that match accepts, depth
// first, or nil.
func (n *Node) Find(match func(*Node) bool) *Node {
	for _, c := range n.Children {
		if c.Tag != "" && match(c) {
			return c
		}
		if f := c.Find(match); f != nil {
			return f
		}
	}
	return nil
}

// ByID returns the element below n whose id is id, and fails the test
// when there is none.
func (n *Node) ByID(t testing.TB, id string) *Node {
	t.Helper()
	e := n.Find(func(c *Node) bool { return c.Attrs["id"] == id })
	if e == nil {
		t.Fatalf("the page has no element #%s", id)
	}
	return e
}

// Elements returns the element children of n.
func (n *Node) Elements() []*Node {
	var out []*Node
	for _, c := range n.Children {
		if c.Tag != "" {
			out = append(out, c)
		}
	}
	return out
}

// ElementsNamed returns the element children of n with tag.
func (n *Node) ElementsNamed(tag string) []*Node {
	var out []*Node
	for _, c := range n.Elements() {
		if c.Tag == tag {
			out = append(out, c)
		}
	}
	return out
}

// Text is the text content of n with runs of white space collapsed.
func (n *Node) Text() string {
	var b strings.Builder
	var walk func(*Node)
	walk = func(m *Node) {
		if m.Tag == "" {
			b.WriteString(m.Data)
		}
		for _, c := range m.Children {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// HasClass reports whether n has class c.
func (n *Node) HasClass(c string) bool {
	return slices.Contains(strings.Fields(n.Attrs["class"]), c)
}

// Shown reports whether n lacks the hidden attribute, which is how the
// page hides its banners and optional rows.
func (n *Node) Shown() bool {
	_, hidden := n.Attrs["hidden"]
	return !hidden
}

// WantText fails the test unless the text of d's element id is want.
func WantText(t testing.TB, d *Node, id, want string) {
	t.Helper()
	if got := d.ByID(t, id).Text(); got != want {
		t.Errorf("#%s = %q, want %q", id, got, want)
	}
}

// WantContains fails the test unless the text of d's element id holds
// each of wants.
func WantContains(t testing.TB, d *Node, id string, wants ...string) {
	t.Helper()
	got := d.ByID(t, id).Text()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("#%s = %q, want it to contain %q", id, got, w)
		}
	}
}

// WantShown fails the test unless d's element id is shown, or hidden
// when want is false.
func WantShown(t testing.TB, d *Node, id string, want bool) {
	t.Helper()
	if got := d.ByID(t, id).Shown(); got != want {
		t.Errorf("#%s shown = %v, want %v (text %q)", id, got, want, d.ByID(t, id).Text())
	}
}
