package apiserver

import (
	"log/slog"
	"net/http"
	"time"
)

// The operator server's timeouts: every http.Server timeout is set. A call
// this server forwards to the leader (a replace) must get its answer
// within the write timeout, or the answer could not be written back:
// forwardBudget leaves a fifth of it for writing. GET /v1/slotmap?index=
// moves its own connection's write deadline instead (it blocks by
// design).
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 10 * time.Second
	idleTimeout       = 60 * time.Second
)

// HTTPServer returns the http.Server that serves a.Handler(), with the
// timeouts above and its errors logged as warnings. Its Shutdown makes
// every blocked read (GET /v1/slotmap?index=) answer at once.
func (a *Server) HTTPServer() *http.Server {
	srv := newHTTPServer(a.Handler(), a.logger)
	// GET /v1/slotmap?index= may block up to 5 minutes: it moves its own
	// connection's write deadline past WriteTimeout, and answers at once
	// when the server shuts down.
	srv.RegisterOnShutdown(a.stopWaiting)
	return srv
}

// newHTTPServer returns the operator server for h, with the timeouts above
// and its errors logged to logger as warnings.
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// forwardBudget returns how long a call forwarded to the leader may take
// on a server whose write timeout is write (0: writeTimeout): four fifths
// of it, so the answer, the leader's or the follower's 503, is written
// before the write deadline.
func forwardBudget(write time.Duration) time.Duration {
	if write <= 0 {
		write = writeTimeout
	}
	return write - write/5
}
