// Package mcribapi is mcrib's wire vocabulary: the documents of the
// operator HTTP API (status, slot map aside, freeze, drain, replace,
// events, history and the boot limit), the request bodies with the
// parsers the server reads them with, the errors that map to HTTP status
// codes, and the typed vocabularies (node state, event kind, eviction
// reason, pass outcome, move kind). The server, the CLI, the control loop,
// the metrics and the tests all use these types, so a document is written
// down once; an application that talks to mcrib over HTTP can decode with
// them too. docs/api.md describes every document, docs/invariants.md the
// rules they keep.
//
// The slot map document is cachenodes.SlotMap (cachenodes.ParseSlotMap).
//
// What it promises: the JSON of each type is the document as the API
// sends it, field for field and in that order; fields may be added, none
// removed or renamed. A parser's error wraps ErrBadRequest and its text
// after the sentinel's (Sentence) is one readable sentence that the server
// answers with. The package holds no state: its values are plain and its
// functions safe for concurrent use. It imports only the standard library.
package mcribapi
