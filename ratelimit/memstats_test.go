package ratelimit

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// memcachedCounters reads pid, uptime, get_hits and get_misses from the
// memcached at addr with the text protocol's "stats" command.
func memcachedCounters(ctx context.Context, addr string) (Counters, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Counters{}, fmt.Errorf("dialing memcached %s: %w", addr, err)
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(2 * time.Second)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return Counters{}, err
	}
	if _, err := conn.Write([]byte("stats\r\n")); err != nil {
		return Counters{}, fmt.Errorf("asking memcached %s for stats: %w", addr, err)
	}
	var c Counters
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "END" {
			return c, nil
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "STAT" {
			continue
		}
		n, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			continue
		}
		switch f[1] {
		case "pid":
			c.PID = int64(n)
		case "uptime":
			c.Uptime = time.Duration(n) * time.Second
		case "get_hits":
			c.Hits = n
		case "get_misses":
			c.Misses = n
		}
	}
	if err := sc.Err(); err != nil {
		return Counters{}, fmt.Errorf("reading stats of memcached %s: %w", addr, err)
	}
	return Counters{}, fmt.Errorf("reading stats of memcached %s: the answer ended before END", addr)
}
