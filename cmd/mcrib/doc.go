// Command mcrib is the control plane of a memcached cache tier discovered
// through Consul, and its operator command line.
//
// `mcrib serve` runs the control plane for one pool: it keeps the slot map in
// Consul KV in step with the cache nodes, tells a node that is restarting
// from one that is gone, and serves the operator HTTP API. The client
// commands talk to that API; sim simulates a pool on mcrib's own code. The
// commands (a test keeps this list in step with the command table):
//
//	mcrib serve [flags]                run the control plane (mcrib serve -h lists its flags)
//	mcrib status [--json]              print the status of a running server
//	mcrib slots [--json]               print the slot map
//	mcrib freeze --reason TEXT         freeze membership changes (--force over another operator's freeze)
//	mcrib unfreeze                     lift the freeze
//	mcrib ratelimit [set N | auto]     print the boot limit, pin it to N boots/s, or hand it back to the controller
//	mcrib zones [--json]               print one line per zone: nodes, slots, unreachable, hit rate, drain
//	mcrib drain ZONE --reason TEXT     drain a zone gradually (--percent P, --step S, --every D)
//	mcrib undrain ZONE                 give a drained zone its slots back, at the same pace
//	mcrib replace NODE --reason TEXT   move a node's slot to a spare, warm
//	mcrib resize [--slots N | stop]    print, start (--reason TEXT, --step S, --every D) or stop the doubling of the slots
//	mcrib roll [--all | stop]          print, start (--zone Z, --nodes A,B, --reason TEXT, --exec CMD) or stop a rolling restart
//	mcrib events [--follow]            print mcrib's latest decisions and why
//	mcrib sim [flags]                  simulate scenarios on mcrib's own code
//	mcrib version [--json]             print the version
//	mcrib help [command]               print the commands, or one command's flags and examples
//
// The client commands (status to events) take the client flags after the
// command or before it: --addr URL (env MCRIB_ADDR, default
// http://127.0.0.1:7070), --token-file FILE (env MCRIB_TOKEN_FILE, or the
// token itself in env MCRIB_TOKEN), --who NAME (env MCRIB_WHO, default
// $USER@host: the name the server records as "by" of a change) and --json
// (the server's JSON answer as it came). They exit 0 on success, 1 when the
// server answers with an error or cannot be reached, 2 on a usage error.
package main
