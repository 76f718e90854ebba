//go:build tools

package main

// The mutation tool that `make mutate` builds into bin/gremlins; pinned
// here so that the product's go.mod stays small.
import _ "github.com/go-gremlins/gremlins/cmd/gremlins"
