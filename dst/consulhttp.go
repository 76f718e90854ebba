package dst

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// memcachedService is the Consul service of the cache nodes.
const memcachedService = "memcached"

// consulTransport is the http.RoundTripper of one host's *api.Client: each
// request crosses the simulated network from the host to the Consul
// servers and is answered by the simulated Consul, synchronously, on the
// caller's goroutine (no socket, no goroutine).
type consulTransport struct {
	w    *world
	host string
}

var _ http.RoundTripper = consulTransport{}

// newConsulClient returns a real *api.Client for host, over the simulated
// network.
func (w *world) newConsulClient(host string) *api.Client {
	conf := &api.Config{Address: consulHost + ":8500", Scheme: "http", HttpClient: &http.Client{Transport: consulTransport{w: w, host: host}}}
	c, err := api.NewClient(conf)
	if err != nil {
		panic(fmt.Sprintf("dst: building a consul client: %v", err))
	}
	return c
}

// RoundTrip carries req to the simulated Consul and its answer back, or
// fails as the network and the faults in force decide.
func (t consulTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w, c := t.w, t.w.consul
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	key := req.Method + " " + req.URL.Path
	if strings.HasPrefix(req.URL.Path, "/v1/agent/") {
		// The host's own agent answers these, without the servers.
		if a := c.agents[t.host]; a == nil || !a.up {
			return nil, errRefused
		}
		status, answer := c.serve(t.host, req, body)
		return respond(req, status, answer, c.index), nil
	}
	out := w.net.send(t.host, consulHost, "consul", key)
	if out == lostRequest || out == refused {
		w.tr.add(w.now, "%s → consul %s: %s", t.host, key, out)
		return nil, &netError{msg: "dial tcp " + consulHost + ":8500: i/o timeout", timeout: true}
	}
	if c.unavailable > 0 || (c.errRate > 0 && w.chance("consul-err", t.host, key) < c.errRate) {
		w.tr.add(w.now, "%s → consul %s: 500", t.host, key)
		return respond(req, http.StatusInternalServerError, []byte("rpc error making call: No cluster leader"), c.index), nil
	}
	if snap := c.laggedKV(t.host, req); snap != nil {
		status, answer := c.serveLagged(snap, req)
		if out == lostAnswer {
			return nil, &netError{msg: "read tcp " + consulHost + ":8500: i/o timeout", timeout: true}
		}
		return respond(req, status, answer, snap.index), nil
	}
	status, answer := c.serve(t.host, req, body)
	c.noteWrite(t.host, req)
	if out == lostAnswer || (c.lostRate > 0 && req.Method != http.MethodGet && w.chance("consul-lost", t.host, key) < c.lostRate) {
		w.chk.onLostAnswer(t.host, req.URL.Path, body)
		w.tr.add(w.now, "%s → consul %s: done (%d), answer lost", t.host, key, status)
		return nil, &netError{msg: "read tcp " + consulHost + ":8500: i/o timeout", timeout: true}
	}
	if status == http.StatusOK && readsSlotMap(req, body) {
		c.mapReads[t.host] = w.now
	}
	return respond(req, status, answer, c.index), nil
}

// readsSlotMap reports whether req, answered successfully, read the pool's
// slot map: a GET of its key or of a prefix of it, or a transaction that
// names it (the leader's write, checked against the map it read).
func readsSlotMap(req *http.Request, body []byte) bool {
	key := poolKeys.SlotMap()
	switch p := req.URL.Path; {
	case req.Method == http.MethodGet && strings.HasPrefix(p, "/v1/kv/"):
		k := strings.TrimPrefix(p, "/v1/kv/")
		return k == key || (req.URL.Query().Has("recurse") && strings.HasPrefix(key, k))
	case p == "/v1/txn":
		return bytes.Contains(body, []byte(strconv.Quote(key)))
	}
	return false
}

// respond builds an HTTP answer.
func respond(req *http.Request, status int, body []byte, index uint64) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Consul-Index", strconv.FormatUint(index, 10))
	h.Set("X-Consul-LastContact", "0")
	h.Set("X-Consul-KnownLeader", "true")
	return &http.Response{Status: http.StatusText(status), StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

// serve answers one request as Consul's HTTP API does, for the endpoints
// the driven code calls.
func (c *consulSim) serve(host string, req *http.Request, body []byte) (int, []byte) {
	p, q := req.URL.Path, req.URL.Query()
	switch {
	case strings.HasPrefix(p, "/v1/kv/"):
		return c.serveKV(host, req.Method, strings.TrimPrefix(p, "/v1/kv/"), q, body)
	case p == "/v1/txn" && req.Method == http.MethodPut:
		var ops api.TxnOps
		if err := json.Unmarshal(body, &ops); err != nil {
			return http.StatusBadRequest, []byte(err.Error())
		}
		res, errs := c.txn(ops)
		if len(errs) > 0 {
			return http.StatusConflict, mustJSON(api.TxnResponse{Errors: errs})
		}
		return http.StatusOK, mustJSON(api.TxnResponse{Results: res})
	case strings.HasPrefix(p, "/v1/health/service/") && req.Method == http.MethodGet:
		return http.StatusOK, mustJSON(c.health(strings.TrimPrefix(p, "/v1/health/service/")))
	case p == "/v1/session/create" && req.Method == http.MethodPut:
		var req struct {
			Name, Node, Behavior, TTL string
			LockDelay                 string
			NodeChecks                []string
			ServiceChecks             []api.ServiceCheck
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return http.StatusBadRequest, []byte(err.Error())
		}
		e := api.SessionEntry{Name: req.Name, Node: req.Node, Behavior: req.Behavior, TTL: req.TTL, NodeChecks: req.NodeChecks, ServiceChecks: req.ServiceChecks, LockDelay: 15 * time.Second}
		if req.LockDelay != "" {
			d, err := time.ParseDuration(req.LockDelay)
			if err != nil {
				return http.StatusBadRequest, []byte(err.Error())
			}
			e.LockDelay = d
		}
		id, err := c.createSession(host, e)
		if err != nil {
			return http.StatusInternalServerError, []byte(err.Error())
		}
		return http.StatusOK, mustJSON(map[string]string{"ID": id})
	case strings.HasPrefix(p, "/v1/session/renew/") && req.Method == http.MethodPut:
		s := c.sessions[strings.TrimPrefix(p, "/v1/session/renew/")]
		if s == nil {
			return http.StatusNotFound, []byte("Session id not found")
		}
		s.lastRenew = c.w.now
		return http.StatusOK, mustJSON([]api.SessionEntry{s.entry})
	case strings.HasPrefix(p, "/v1/session/destroy/") && req.Method == http.MethodPut:
		c.destroy(strings.TrimPrefix(p, "/v1/session/destroy/"), "destroyed by its owner")
		return http.StatusOK, []byte("true")
	case p == "/v1/agent/service/register" && req.Method == http.MethodPut:
		var reg api.AgentServiceRegistration
		if err := json.Unmarshal(body, &reg); err != nil {
			return http.StatusBadRequest, []byte(err.Error())
		}
		if a := c.agents[host]; a == nil || !a.up {
			return http.StatusInternalServerError, []byte("agent is not running")
		}
		if err := c.registerCheck(host, reg); err != nil {
			return http.StatusBadRequest, []byte(err.Error())
		}
		return http.StatusOK, nil
	case strings.HasPrefix(p, "/v1/agent/service/deregister/") && req.Method == http.MethodPut:
		c.deregister(host, strings.TrimPrefix(p, "/v1/agent/service/deregister/"))
		return http.StatusOK, nil
	case strings.HasPrefix(p, "/v1/agent/check/update/") && req.Method == http.MethodPut:
		var u struct{ Status, Output string }
		if err := json.Unmarshal(body, &u); err != nil {
			return http.StatusBadRequest, []byte(err.Error())
		}
		if err := c.updateTTL(host, strings.TrimPrefix(p, "/v1/agent/check/update/"), u.Status); err != nil {
			return http.StatusNotFound, []byte(err.Error())
		}
		return http.StatusOK, nil
	}
	return http.StatusNotFound, []byte("no such endpoint in the simulation: " + req.Method + " " + p)
}

// serveKV answers /v1/kv/<key>.
func (c *consulSim) serveKV(host, method, key string, q url.Values, body []byte) (int, []byte) {
	flags, _ := strconv.ParseUint(q.Get("flags"), 10, 64)
	switch method {
	case http.MethodGet:
		if q.Has("recurse") {
			pairs := c.list(key)
			if len(pairs) == 0 {
				return http.StatusNotFound, nil
			}
			return http.StatusOK, mustJSON(pairs)
		}
		e := c.kv[key]
		if e == nil {
			return http.StatusNotFound, nil
		}
		return http.StatusOK, mustJSON([]*api.KVPair{e.pair(key)})
	case http.MethodPut:
		switch {
		case q.Has("acquire"):
			ok, err := c.acquire(key, body, flags, q.Get("acquire"))
			if err != nil {
				return http.StatusInternalServerError, []byte(err.Error())
			}
			return http.StatusOK, boolJSON(ok)
		case q.Has("release"):
			return http.StatusOK, boolJSON(c.release(key, body, flags, q.Get("release")))
		case q.Has("cas"):
			idx, _ := strconv.ParseUint(q.Get("cas"), 10, 64)
			e := c.kv[key]
			if (idx == 0 && e != nil) || (idx != 0 && (e == nil || e.modifyIndex != idx)) {
				return http.StatusOK, boolJSON(false)
			}
		}
		c.put(key, body, flags, c.bump())
		return http.StatusOK, boolJSON(true)
	case http.MethodDelete:
		e := c.kv[key]
		if q.Has("cas") {
			idx, _ := strconv.ParseUint(q.Get("cas"), 10, 64)
			if e == nil || e.modifyIndex != idx {
				return http.StatusOK, boolJSON(false)
			}
		}
		if e != nil {
			delete(c.kv, key)
			c.bump()
		}
		return http.StatusOK, boolJSON(true)
	}
	return http.StatusMethodNotAllowed, nil
}

func boolJSON(b bool) []byte {
	if b {
		return []byte("true")
	}
	return []byte("false")
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("dst: encoding a consul answer: %v", err))
	}
	return b
}

// netError is a network failure as the Go net package reports one: an
// i/o timeout or a refused connection. It is a net.Error, so mcclient
// takes it for unreachability.
type netError struct {
	msg     string
	timeout bool
}

func (e *netError) Error() string   { return e.msg }
func (e *netError) Timeout() bool   { return e.timeout }
func (e *netError) Temporary() bool { return e.timeout }
