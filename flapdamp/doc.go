// Package flapdamp makes mcrib's decisions over time about cache nodes that
// come and go: when an absent, unreachable node is due for replacement (Hold),
// when a node flaps so often that it should be left alone (Penalty, after BGP
// route-flap damping, RFC 2439), when so many nodes are absent at once that
// the observer rather than the fleet is probably broken (MassGuard), and how
// many replacements may happen per minute (Ceiling).
//
// The package does no I/O and never reads the clock: every decision takes the
// current time as an argument, so the control loop passes its clock's now and
// tests pass constructed times. It imports only the standard library.
//
// None of the stateful types (Penalty, Ceiling) is safe for concurrent use;
// the control loop owns them and calls them from its single goroutine.
package flapdamp
