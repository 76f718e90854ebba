// Command mcrib is the control plane of a memcached cache tier discovered
// through Consul, and its operator command line.
//
// `mcrib serve` runs the control plane for one pool: it keeps the slot map in
// Consul KV in step with the cache nodes, tells a node that is restarting
// from one that is gone, and serves the operator HTTP API. The other commands
// (status, slots, freeze, unfreeze, ratelimit, version) are clients of that
// API. `mcrib help` lists them; CONTRACT.md section 1 is the reference.
package main
