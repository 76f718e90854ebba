package mcribapi

// ReplaceRequest is the body of POST /v1/nodes/{id}/replace.
type ReplaceRequest struct {
	Reason string `json:"reason"`
}

// ReplaceAnswer is the answer of POST /v1/nodes/{id}/replace: the node's
// slot moved from it to a spare.
type ReplaceAnswer struct {
	Slot int    `json:"slot"`
	From string `json:"from"`
	To   string `json:"to"`
	Warm bool   `json:"warm"`
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
