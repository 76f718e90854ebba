package repocheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the module's root directory, seen from this package's directory
// (go test runs in it).
const root = "../.."

// mdPages returns the pages whose links must resolve: README.md,
// CHANGELOG.md and every docs/*.md, as paths relative to root.
func mdPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "CHANGELOG.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("docs/ holds no .md page")
	}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages
}

// readPage returns the text of page, a path relative to root.
func readPage(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	// fence opens or closes a fenced code block (also inside a list item).
	fence = regexp.MustCompile("^\\s*(```|~~~)")
	// codeSpan is an inline code span; links inside one are not links.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// mdLink is an inline link or image: [text](target "title").
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// htmlLink is an href or src attribute of an HTML tag.
	htmlLink = regexp.MustCompile(`(?:href|src)="([^"]+)"`)
	// htmlAnchor is an HTML anchor a link may name: <a id="x"> or <a name="x">.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// heading is an ATX heading.
	heading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// inlineLink is a link inside a heading's text, whose text is kept.
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	// htmlTag is any HTML tag inside a heading's text.
	htmlTag = regexp.MustCompile(`<[^>]*>`)
)

// proseLines returns the lines of a Markdown text outside fenced code
// blocks, with their line numbers (from 1).
func proseLines(text string) (lines []string, numbers []int) {
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if !inFence {
			lines = append(lines, line)
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// slug returns the anchor GitHub makes of a heading's text: the rendered
// text in lower case, without punctuation other than '-' and '_', its
// spaces turned into '-'.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown page: one per heading, as
// GitHub numbers repeated ones (x, x-1, x-2), and the HTML anchors.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := proseLines(text)
	for _, line := range lines {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// link is one relative link of a page.
type link struct {
	line   int
	target string
}

// relativeLinks returns the links of a Markdown page that stay inside the
// repository: neither a URL with a scheme nor a protocol-relative one.
func relativeLinks(text string) []link {
	var out []link
	lines, numbers := proseLines(text)
	for i, line := range lines {
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range htmlLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "//") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, link{line: numbers[i], target: target})
		}
	}
	return out
}

// checkTarget says what is wrong with target, a link from page (both
// relative to root), or "" when it resolves: the file or directory exists
// and, for an #anchor into a Markdown page, that page has the anchor.
// known holds the anchors of the pages read so far, each page's read once.
func checkTarget(t *testing.T, known map[string]map[string]bool, page, target string) string {
	t.Helper()
	path, anchor, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), filepath.FromSlash(path))))
		if file == ".." || strings.HasPrefix(file, "../") {
			return "it leaves the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
			return "no such file: " + file
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(file, ".md") {
		return "an anchor into " + file + ", which is not a Markdown page"
	}
	if known[file] == nil {
		known[file] = anchors(readPage(t, file))
	}
	if !known[file][anchor] {
		return file + " has no heading or anchor #" + anchor
	}
	return ""
}

// TestDocLinksResolve: every relative link and image of README.md and
// docs/*.md names a file of the repository, and every #anchor a heading
// (or HTML anchor) of the page it points into.
func TestDocLinksResolve(t *testing.T) {
	checked := 0
	known := map[string]map[string]bool{}
	for _, page := range mdPages(t) {
		for _, l := range relativeLinks(readPage(t, page)) {
			checked++
			if problem := checkTarget(t, known, page, l.target); problem != "" {
				t.Errorf("%s:%d: link %q: %s", page, l.line, l.target, problem)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link pattern is broken")
	}
}

// TestSlug pins the anchors GitHub makes of the headings these pages use.
func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Runbook", "runbook"},
		{"A zone is bad: drain it", "a-zone-is-bad-drain-it"},
		{"Retire a node: mcrib replace", "retire-a-node-mcrib-replace"},
		{"Invariant 2: no stale value comes back", "invariant-2-no-stale-value-comes-back"},
		{"`GET /v1/slotmap` and its index", "get-v1slotmap-and-its-index"},
		{"The `--warm-for` flag", "the---warm-for-flag"},
		{"Zones, drains and warm moves", "zones-drains-and-warm-moves"},
		{"[The runbook](runbook.md) itself", "the-runbook-itself"},
		{"mcrib_zone_alert{zone}", "mcrib_zone_alertzone"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
	a := anchors("# Top\n## Same\n```\n# not a heading\n```\n## Same\n<a id=\"here\"></a>\n")
	for _, want := range []string{"top", "same", "same-1", "here"} {
		if !a[want] {
			t.Errorf("anchors: %q missing from %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Errorf("anchors: a line in a code block counted as a heading")
	}
}

// TestRelativeLinks pins what counts as a link to check.
func TestRelativeLinks(t *testing.T) {
	text := "See [the runbook](docs/runbook.md#cold-cache), ![a picture](docs/x.png),\n" +
		"[Consul](https://www.consul.io/) and `[not](a-link.md)`.\n" +
		"```\n[inside](code.md)\n```\n<img src=\"docs/y.png\">\n"
	var got []string
	for _, l := range relativeLinks(text) {
		got = append(got, l.target)
	}
	want := []string{"docs/runbook.md#cold-cache", "docs/x.png", "docs/y.png"}
	if !slices.Equal(got, want) {
		t.Errorf("relativeLinks = %q, want %q", got, want)
	}
}
