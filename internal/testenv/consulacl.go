package testenv

import (
	"fmt"
	"testing"
)

// StartConsulACL starts a Consul dev server like StartConsul with ACLs
// enabled and denying by default. managementToken (a UUID; NewUUID makes
// one) is its initial management token and its agent token; Client sends
// it. Tests create narrower tokens through Client.
func StartConsulACL(t testing.TB, managementToken string) *Consul {
	t.Helper()
	return startConsulWith(t, nil, managementToken)
}

// NewUUID returns a random RFC 4122 version 4 UUID, e.g. for an ACL token.
func NewUUID(t testing.TB) string {
	t.Helper()
	return newUUID(t)
}

// aclHCL is the agent configuration of c's ACLs: none when it has no
// management token.
func (c *Consul) aclHCL() string {
	if c.aclToken == "" {
		return "acl { enabled = false }"
	}
	return fmt.Sprintf(`acl { enabled = true, default_policy = "deny", enable_token_persistence = false, tokens { initial_management = %q, agent = %q } }`, c.aclToken, c.aclToken)
}
