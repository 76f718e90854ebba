// Package cli is the client side of mcrib's command line: API, a typed
// client of the operator API (docs/api.md) whose calls return the mcribapi
// documents, and Client, which runs the client commands over it (status,
// slots, freeze, unfreeze, ratelimit, zones, drain, undrain, replace,
// events, resize; one file each) and prints their answers for a person, or
// as the JSON that came.
//
// New builds a Client from Options, which the command line fills from the
// client flags and the environment (docs/cli.md); the command line keeps
// the flags, the usage errors and the exit codes. The renderers print a
// field the server did not send (an older or newer mcrib, a value not
// known yet) as "unknown", never as zero. An answer outside 2xx is a
// *ServerError with the server's message and what to do about it; a
// failed round trip an error that names the address, where it came from
// and what to check.
package cli
