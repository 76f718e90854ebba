//go:build tools

// Package consul pins the Consul agent that mcrib's tests and `make run` use.
// It is a separate module so the product's go.mod stays small.
package consul

import _ "github.com/hashicorp/consul"
