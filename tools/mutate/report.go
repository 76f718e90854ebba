package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report is what make mutate writes: report.md and mutants.json.
type report struct {
	Started  time.Time     `json:"started"`
	Commit   string        `json:"commit"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Workers  int           `json:"workers"`
	CPUs     int           `json:"cpus"`
	DST      bool          `json:"dst"`
	Packages []pkgReport   `json:"packages"`
	Mutants  []*mutant     `json:"mutants"`
	// Updates are the later runs of some packages merged in (-merge).
	Updates []string `json:"updates,omitempty"`
}

// mergeInto makes r the report in dir with r's packages replaced by r's
// run of them: the others' mutants, the run's time and start stay.
func (r *report) mergeInto(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "mutants.json"))
	if err != nil {
		return fmt.Errorf("-merge: %w", err)
	}
	var old report
	if err := json.Unmarshal(data, &old); err != nil {
		return fmt.Errorf("-merge: %w", err)
	}
	if old.DST != r.DST {
		return fmt.Errorf("-merge: the report in %s was made with dst %v, this run with %v", dir, old.DST, r.DST)
	}
	ran := map[string]bool{}
	var dirs []string
	for _, p := range r.Packages {
		ran[p.Dir] = true
		dirs = append(dirs, p.Dir)
	}
	pkgs := slices.DeleteFunc(old.Packages, func(p pkgReport) bool { return ran[p.Dir] })
	r.Packages = append(pkgs, r.Packages...)
	r.Mutants = append(slices.DeleteFunc(old.Mutants, func(m *mutant) bool { return ran[m.Dir] }), r.Mutants...)
	commit := ""
	if r.Commit != "" {
		commit = " at " + r.Commit
	}
	r.Updates = append(old.Updates, fmt.Sprintf("%s run again%s, %s, in %s", strings.Join(dirs, ", "), commit, r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Elapsed.Round(time.Second)))
	r.Started, r.Elapsed, r.Commit, r.Workers = old.Started, old.Elapsed, old.Commit, old.Workers
	return nil
}

// pkgReport is one package of the scope as the run saw it.
type pkgReport struct {
	Dir      string   `json:"dir"`
	Files    []string `json:"files"`
	Short    bool     `json:"short"`
	Covering []string `json:"covering_tests"`
}

// tally counts a set of mutants by final status.
type tally struct {
	total, tests, dst, lived, uncovered, unviable int
}

func (t *tally) add(m *mutant) {
	t.total++
	switch m.Status {
	case killedByTests:
		t.tests++
	case killedByDST:
		t.dst++
	case lived:
		t.lived++
	case notCovered:
		t.uncovered++
	case notViable:
		t.unviable++
	}
}

// viable is the score's denominator: the mutants that compile.
func (t tally) viable() int { return t.total - t.unviable }

// killed is the score's numerator.
func (t tally) killed() int { return t.tests + t.dst }

func (t tally) score() string {
	if t.viable() == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(t.killed())/float64(t.viable()))
}

// byFile returns the tally of each file ("dir/file", sorted) and the total.
func (r *report) byFile() ([]string, map[string]*tally, tally) {
	files := map[string]*tally{}
	var total tally
	for _, m := range r.Mutants {
		k := m.Dir + "/" + m.File
		if files[k] == nil {
			files[k] = &tally{}
		}
		files[k].add(m)
		total.add(m)
	}
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	slices.Sort(names)
	return names, files, total
}

// describe returns git describe --always --dirty of the work tree at dir.
func describe(dir string) string {
	out, err := exec.Command("git", "-C", dir, "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// table prints the score by file.
func (r *report) table(w io.Writer) {
	names, files, total := r.byFile()
	fmt.Fprintf(w, "%-34s %7s %7s %5s %5s %7s %7s %7s\n", "file", "mutants", "tests", "dst", "lived", "uncov", "unviab", "score")
	for _, n := range names {
		t := files[n]
		fmt.Fprintf(w, "%-34s %7d %7d %5d %5d %7d %7d %7s\n", n, t.total, t.tests, t.dst, t.lived, t.uncovered, t.unviable, t.score())
	}
	fmt.Fprintf(w, "%-34s %7d %7d %5d %5d %7d %7d %7s\n", "total", total.total, total.tests, total.dst, total.lived, total.uncovered, total.unviable, total.score())
	fmt.Fprintf(w, "mutation score: %d of %d viable mutants killed (%s)\n", total.killed(), total.viable(), total.score())
}

// write puts report.md and mutants.json in dir.
func (r *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r.CPUs = runtime.NumCPU()
	slices.SortFunc(r.Mutants, func(a, b *mutant) int {
		return cmp.Or(cmp.Compare(a.Dir, b.Dir), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col), cmp.Compare(a.Type, b.Type))
	})
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "mutants.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), r.markdown(), 0o644)
}

func (r *report) markdown() []byte {
	var b bytes.Buffer
	names, files, total := r.byFile()
	fmt.Fprintf(&b, "# Mutation testing\n\n")
	fmt.Fprintf(&b, "Written by `make mutate` (tools/mutate; [how it works](../../docs/testing.md#mutation-testing)) at commit %s, %s, in %s with %d workers on %d CPUs.\n\n",
		r.Commit, r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Elapsed.Round(time.Second), r.Workers, r.CPUs)
	for _, u := range r.Updates {
		fmt.Fprintf(&b, "Then %s.\n\n", u)
	}
	killers := "each package's covering tests and `go test ./dst` (less TestDeterminism)"
	if !r.DST {
		killers = "each package's covering tests alone (-no-dst)"
	}
	fmt.Fprintf(&b, "Mutants: gremlins v0.6.0 (%s). Killers: %s.\n\n", strings.Join(mutatorNames(), ", "), killers)
	fmt.Fprintf(&b, "**Mutation score: %d of %d viable mutants killed (%s)**; %d that do not compile left out.\n\n", total.killed(), total.viable(), total.score(), total.unviable)
	fmt.Fprintf(&b, "| file | mutants | killed by its tests | killed by dst | lived | not covered | not viable | score |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range names {
		t := files[n]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %s |\n", n, t.total, t.tests, t.dst, t.lived, t.uncovered, t.unviable, t.score())
	}
	fmt.Fprintf(&b, "| **total** | %d | %d | %d | %d | %d | %d | **%s** |\n\n", total.total, total.tests, total.dst, total.lived, total.uncovered, total.unviable, total.score())
	fmt.Fprintf(&b, "## Covering tests\n\n")
	for _, p := range r.Packages {
		short := ""
		if p.Short {
			short = ", -short"
		}
		fmt.Fprintf(&b, "- `%s` (%s%s): %d tests\n", p.Dir, strings.Join(p.Files, ", "), short, len(p.Covering))
	}
	fmt.Fprintf(&b, "\n## Survivors\n\nEach: line:column, the mutant type, the token and what the mutant put there, the line of source; \"not covered\" when no killer runs the line.\n")
	cur := ""
	for _, m := range r.Mutants {
		if m.Status != lived && m.Status != notCovered {
			continue
		}
		if f := m.Dir + "/" + m.File; f != cur {
			cur = f
			fmt.Fprintf(&b, "\n### %s\n\n", f)
		}
		note := ""
		if m.Status == notCovered {
			note = " (not covered)"
		}
		fmt.Fprintf(&b, "- %d:%d %s `%s`→`%s`%s: `%s`\n", m.Line, m.Col, m.Type, m.From, m.To, note, m.Source)
	}
	return b.Bytes()
}

// mutatorNames returns the mutant types turned on, as gremlins names them.
func mutatorNames() []string {
	var out []string
	for _, m := range mutators {
		out = append(out, strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(m, "--"), "-", "_")))
	}
	return out
}
