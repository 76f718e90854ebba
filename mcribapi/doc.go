// Package mcribapi is mcrib's wire vocabulary: the documents of the
// operator HTTP API, which the server, the CLI, the control loop and the
// tests share, so that each is written down once; an application that
// talks to mcrib over HTTP can decode with them too. docs/api.md
// describes every document and its invariants.
//
// The package holds no state: its values are plain and its functions safe
// for concurrent use. It imports only the standard library.
package mcribapi
