package mcribapi

import "time"

// FreezeDoc is the freeze document, stored in Consul KV while membership
// is frozen, answered by PUT /v1/freeze and shown as the status's freeze.
type FreezeDoc struct {
	Frozen bool      `json:"frozen"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	By     string    `json:"by"`
}

// FreezeRequest is the body of PUT /v1/freeze.
type FreezeRequest struct {
	Reason string `json:"reason"`
}

// ParseFreezeRequest reads the body of PUT /v1/freeze: exactly one JSON
// object {"reason": "…"} with a non-empty reason of at most MaxReason
// characters, which it returns trimmed. Its errors wrap ErrBadRequest and
// are one readable sentence.
func ParseFreezeRequest(body []byte) (reason string, err error) {
	return parseReason(body, "a freeze")
}
