// Package apiserver is mcrib's operator HTTP server: the API of
// docs/api.md over a control loop and a boot limiter, and the dashboard
// (its page, script, style sheet and icon are embedded beside it).
//
// New builds a Server from Options. Server.ServeHTTP is the API alone:
// every route a handler that returns its error, written as the JSON error
// body with its status in one place (mcribapi.StatusCode). Server.Handler
// puts the browser rule and, without a token, the Host check in front,
// with a trace span per request when Options.Tracer is set; HTTPServer
// serves that with every timeout set, and its Shutdown answers the
// blocked reads at once.
//
// Its promises: a call that changes state is checked in the order 403
// (browser rule), 401 (token), 413, 415 (body), 400 (the handler), and a
// refused call changes nothing; a path is answered as it was sent, never
// redirected; a boot or a replace that reaches a follower is forwarded to
// the leader within the server's write timeout.
package apiserver
