package testenv

import "errors"

// errNoFreePort is returned when no port free for both TCP and UDP is found.
var errNoFreePort = errors.New("testenv: no free port found")

// errExited is returned when a process exits while it is awaited.
var errExited = errors.New("testenv: process exited")

// errNodeStillListed is returned when a stopped agent's node stays in the
// catalog although it was deregistered.
var errNodeStillListed = errors.New("testenv: node still in the catalog after deregistration")
