package warmcopy

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

// flushAll empties the memcached at addr.
func flushAll(tb testing.TB, addr string) {
	tb.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("flush_all\r\n")); err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "OK\r\n" {
		tb.Fatalf("flush_all: %q, %v", buf[:n], err)
	}
}

// BenchmarkCopy copies a slot of 24 MB on loopback between two real
// memcacheds at the default rate (20 MB/s) and at no practical limit
// (1 GB/s), for values of 100 bytes (the e2e load's), 1 KB and 4 KB.
// It reports the bytes of values copied per second from the first gets
// to the last check (copied-B/s) and, at the default rate, their share
// of the rate (of-rate, issue 29's target: at least 0.8); the metadump
// before the copy is timed apart (dump-s).
func BenchmarkCopy(b *testing.B) {
	for _, size := range []int{100, 1000, 4000} {
		for _, rate := range []int64{DefaultRate, 1_000_000_000} {
			b.Run(fmt.Sprintf("value=%dB/rate=%dMB", size, rate/1_000_000), func(b *testing.B) {
				count := 24_000_000 / size
				a, bb := testenv.StartMemcached(b), testenv.StartMemcached(b)
				keys := slotKeys("bench:", 0, 1, count)
				fill(b, a.Addr, keys, size)
				c := realCopier(b, Options{Rate: rate})
				m := Move{Source: a.Addr, Target: bb.Addr, Slot: 0, NumSlots: 1}
				var copied int64
				var copying, dumping time.Duration
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					flushAll(b, bb.Addr)
					b.StartTimer()
					p := new(Progress)
					start := time.Now()
					var listed time.Time
					c.afterGets = func([]string) {
						if listed.IsZero() {
							listed = time.Now()
						}
					}
					if err := c.Copy(context.Background(), m, p); err != nil {
						b.Fatal(err)
					}
					end := time.Now()
					s := p.Stats()
					// A metadump may miss a few of the items memcached
					// moves between its LRU queues meanwhile.
					if s.CopiedKeys != s.Listed || s.Listed < int64(count)*99/100 {
						b.Fatalf("copied %d keys of %d: %+v", s.CopiedKeys, count, s)
					}
					copied += s.CopiedBytes
					dumping += listed.Sub(start)
					copying += end.Sub(listed)
				}
				bps := float64(copied) / copying.Seconds()
				b.ReportMetric(bps, "copied-B/s")
				b.ReportMetric(dumping.Seconds()/float64(b.N), "dump-s")
				if rate == DefaultRate {
					b.ReportMetric(bps/float64(rate), "of-rate")
				}
			})
		}
	}
}
