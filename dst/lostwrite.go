package dst

import (
	"bytes"
	"time"

	"github.com/mcrib/mcrib/internal/revert"
)

// onLostAnswer records a transaction of host's that Consul carried out
// and whose answer was lost, when it wrote the flushes document: the
// process that sent it does not know that it stored its owed flushes.
func (c *checker) onLostAnswer(host, path string, body []byte) {
	if path != "/v1/txn" || !bytes.Contains(body, []byte(poolKeys.Flushes())) {
		return
	}
	for _, r := range c.w.replicas {
		if r.host.name == host && r.proc != nil {
			if c.lostFlushWrite == nil {
				c.lostFlushWrite = map[*replicaProc]time.Duration{}
			}
			c.lostFlushWrite[r.proc] = c.w.now
		}
	}
}

// forgottenFix is the fix a leader's forgetting t's owed flush breaks:
// LostWritePending when the leader wrote the flushes document since the
// decision was stored (or in that very write) and got no answer, so it
// shows the decision it may have stored not pending; ForgottenFlush
// otherwise.
func (c *checker) forgottenFix(t *nodeTruth, l *replicaProc) revert.Fix {
	if at, ok := c.lostFlushWrite[l]; ok && at >= t.oweSince-time.Millisecond && at <= t.forgotSince {
		return revert.LostWritePending
	}
	return revert.ForgottenFlush
}
