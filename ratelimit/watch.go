package ratelimit

import (
	"context"
	"log/slog"
	"time"

	"golang.org/x/time/rate"
)

// watchWait is how long one blocking query waits for a change.
const watchWait = 5 * time.Minute

// blockingQuery is one Consul blocking query. It is called with the index
// to wait on (0 for an immediate answer) and returns the index of the
// answer (X-Consul-Index). It handles the answer itself: an answer whose
// index equals waitIndex changed nothing (the wait timed out), and one whose
// index is below waitIndex means Consul's state was reset (the answer is the
// new truth even though its index went backwards).
type blockingQuery func(ctx context.Context, waitIndex uint64) (lastIndex uint64, err error)

// watch runs query as a blocking-query loop until ctx ends, in the manner
// of consul-template's watch/view.go: it passes the last index back,
// follows an index that goes backwards, never lets the index fall to 0
// after the first answer (a 0 would turn blocking queries into a busy
// loop), paces itself to at most 20 queries a second, and on an error logs,
// backs off with jitter and retries, never giving up.
func watch(ctx context.Context, log *slog.Logger, what string, query blockingQuery) {
	pace := rate.NewLimiter(rate.Every(50*time.Millisecond), 5)
	var bo backoff
	var index uint64
	for {
		if err := pace.Wait(ctx); err != nil {
			return
		}
		last, err := query(ctx, index)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d := bo.next()
			log.Warn("watching consul failed; retrying", "what", what, "err", err, "retry_in", d)
			if !sleep(ctx, d) {
				return
			}
			continue
		}
		bo.reset()
		index = max(last, 1)
	}
}
