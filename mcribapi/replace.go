package mcribapi

import "time"

// ReplaceRequest is the body of POST /v1/nodes/{id}/replace.
type ReplaceRequest struct {
	Reason string `json:"reason"`
}

// ReplaceAnswer is the answer of POST /v1/nodes/{id}/replace: the node's
// slot is announced to a spare (flushed, and written as the slot's
// incoming node), which serves it from ServesAt; Warm says whether the
// move is to be warm (it is decided again at ServesAt: cold when the old
// holder does not answer then).
type ReplaceAnswer struct {
	Slot     int       `json:"slot"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Warm     bool      `json:"warm"`
	ServesAt time.Time `json:"serves_at"`
	// SparesLeft is the number of ready spares outside the drained zones
	// after the replace; Warning says, in one sentence, that it took the
	// last of them ("" otherwise).
	SparesLeft int    `json:"spares_left"`
	Warning    string `json:"warning,omitempty"`
}

// ParseReplaceRequest reads the body of POST /v1/nodes/{id}/replace:
// {"reason": "…"} with a non-empty reason of at most MaxReason
// characters, which it returns trimmed. Its errors wrap ErrBadRequest and
// are one readable sentence.
func ParseReplaceRequest(body []byte) (reason string, err error) {
	return parseReason(body, "a replace")
}
