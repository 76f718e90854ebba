// Package repocheck holds no code, only tests that keep the repository
// honest about itself: every relative link of README.md, CHANGELOG.md and
// docs/*.md resolves to a file, and each #anchor into a page to one of its
// headings; every runbook_url of the alert rules in deploy/prometheus
// points to a heading of the runbook; every Go package of the module has
// a package doc comment; the leaf packages (hitrate, slotplan) import nothing but
// the standard library and what their entry allows; and the Go client's
// page quotes the compiled example it shows word for word.
package repocheck
