package cachenodes

import "errors"

// ErrACLHidden is the error of a Consul read whose answer Consul's ACLs
// filtered (the X-Consul-Results-Filtered-By-ACLs header): the token
// mcrib runs with (CONSUL_HTTP_TOKEN) may not read everything the pool
// needs, so the answer is incomplete and is not acted on.
var ErrACLHidden = errors.New("permission denied: consul's ACLs hid part of the answer from this token (check CONSUL_HTTP_TOKEN and the policy in the README)")
