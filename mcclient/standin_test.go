package mcclient_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// startStandIns serves, in this process, what Example_replicas needs of a
// pool so that it runs anywhere: one memcached (standInMemcached) and
// three mcrib replicas that answer GET /v1/slotmap with a map of one slot
// held by it, the first of them down (its connections refused). It
// returns the replicas' base URLs and a func that stops it all.
func startStandIns() (replicas []string, stop func()) {
	mc, err := startStandInMemcached()
	if err != nil {
		panic(err)
	}
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{
		Pool: "default", Generation: 1,
		Slots: []cachenodes.Node{{ID: "mc-1", Addr: mc.addr}},
	})
	if err != nil {
		panic(err)
	}
	doc, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	replicas = []string{down.URL}
	var servers []*httptest.Server
	for range 2 {
		s := httptest.NewServer(standInSlotMap(doc))
		servers = append(servers, s)
		replicas = append(replicas, s.URL)
	}
	return replicas, func() {
		for _, s := range servers {
			s.Close()
		}
		mc.close()
	}
}

// standInSlotMap answers GET /v1/slotmap with doc, which never changes:
// a read that names its index (?index=1) is held until ?wait= passes or
// the client goes, as mcrib holds it until the map changes.
func standInSlotMap(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/slotmap" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("index") == "1" {
			wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("X-Mcrib-Index", "1")
		w.Write(doc)
	})
}

// standInMemcached is an in-memory memcached speaking the part of the
// text protocol gomemcache uses for get, set, add, replace and delete
// (no expiry, no eviction).
type standInMemcached struct {
	addr string
	ln   net.Listener
	wg   sync.WaitGroup

	mu    sync.Mutex
	items map[string]standInItem
	cas   uint64
	conns map[net.Conn]bool
}

type standInItem struct {
	flags uint32
	value []byte
	cas   uint64
}

func startStandInMemcached() (*standInMemcached, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &standInMemcached{addr: ln.Addr().String(), ln: ln, items: map[string]standInItem{}, conns: map[net.Conn]bool{}}
	s.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[conn] = true
			s.mu.Unlock()
			s.wg.Go(func() {
				defer func() {
					conn.Close()
					s.mu.Lock()
					delete(s.conns, conn)
					s.mu.Unlock()
				}()
				s.serve(conn)
			})
		}
	})
	return s, nil
}

// close stops the listener and every connection, and waits for them.
func (s *standInMemcached) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serve answers one connection's commands until it closes.
func (s *standInMemcached) serve(conn net.Conn) {
	r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "get", "gets":
			s.mu.Lock()
			for _, k := range f[1:] {
				if it, ok := s.items[k]; ok {
					fmt.Fprintf(w, "VALUE %s %d %d %d\r\n%s\r\n", k, it.flags, len(it.value), it.cas, it.value)
				}
			}
			s.mu.Unlock()
			w.WriteString("END\r\n")
		case "set", "add", "replace":
			if len(f) < 5 {
				w.WriteString("ERROR\r\n")
				break
			}
			flags, _ := strconv.ParseUint(f[2], 10, 32)
			n, err := strconv.Atoi(f[4])
			if err != nil || n < 0 {
				w.WriteString("CLIENT_ERROR bad data chunk\r\n")
				break
			}
			data := make([]byte, n+2)
			if _, err := io.ReadFull(r, data); err != nil {
				return
			}
			w.WriteString(s.store(f[0], f[1], uint32(flags), data[:n]) + "\r\n")
		case "delete":
			s.mu.Lock()
			_, ok := s.items[f[1]]
			delete(s.items, f[1])
			s.mu.Unlock()
			if ok {
				w.WriteString("DELETED\r\n")
			} else {
				w.WriteString("NOT_FOUND\r\n")
			}
		case "quit":
			w.Flush()
			return
		default:
			w.WriteString("ERROR\r\n")
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// store runs a set, add or replace of key and returns the answer.
func (s *standInMemcached) store(cmd, key string, flags uint32, value []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, there := s.items[key]
	if (cmd == "add" && there) || (cmd == "replace" && !there) {
		return "NOT_STORED"
	}
	s.cas++
	s.items[key] = standInItem{flags: flags, value: append([]byte(nil), value...), cas: s.cas}
	return "STORED"
}
