package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// growKeys is how many keys TestGrowRenderersAgree writes through a real
// nutcracker at each stage, and reads back through the Go client.
const growKeys = 100_000

// growBed is a pool with mcrib writing a twemproxy and an mcrouter config,
// and a real nutcracker run on a copy of the twemproxy config taken at each
// stage (so that a rewrite during a check changes nothing under it).
type growBed struct {
	t      *testing.T
	p      *pool
	m      *mcrib
	listen string
	// nutConf and routerConf are the configs mcrib writes; runConf the
	// copy nutcracker runs on.
	nutConf, routerConf, runConf string
	nut                          *testenv.Nutcracker
}

// stage waits until the map in Consul KV satisfies want, mcrib serves it,
// and both configs it writes are rendered from it; then (re)starts
// nutcracker on that twemproxy config and returns the map.
func (b *growBed) stage(what string, want func(*cachenodes.SlotMap) bool) *cachenodes.SlotMap {
	t := b.t
	t.Helper()
	var sm *cachenodes.SlotMap
	var nut []byte
	testenv.Eventually(t, 30*time.Second, what+": the map stored, served and rendered", func() bool {
		sm = kvSlotMap(t, b.p.consul.Client, "default")
		if sm == nil || !want(sm) {
			return false
		}
		if served := b.m.slotMap(); served == nil || !served.Equal(sm) {
			return false
		}
		rendered, err := controlloop.TwemproxyConfig(sm, b.listen)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(b.nutConf)
		if err != nil || !bytes.Equal(got, rendered) {
			return false
		}
		nut = got
		servers, err := routerServers(b.routerConf)
		if err != nil || len(servers) != sm.NumSlots() {
			return false
		}
		for i, n := range sm.Slots() {
			if servers[i] != n.Addr {
				return false
			}
		}
		return true
	})
	if err := os.WriteFile(b.runConf, nut, 0o644); err != nil {
		t.Fatal(err)
	}
	if b.nut == nil {
		b.nut = testenv.StartNutcracker(t, b.runConf, b.listen)
	} else {
		b.nut.Restart(t)
	}
	return sm
}

// routerServers returns the servers of the pool "default" of the mcrouter
// config at path.
func routerServers(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Pools map[string]struct {
			Servers []string `json:"servers"`
		} `json:"pools"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, err
	}
	return cfg.Pools["default"].Servers, nil
}

// holders writes keys prefix:0 … through nutcracker and returns, for each,
// the address of the one memcached of sm that stores it, failing the test
// when a key is stored on none or on several.
func (b *growBed) holders(sm *cachenodes.SlotMap, prefix string) map[string]string {
	t := b.t
	t.Helper()
	keys := make([]string, growKeys)
	for i := range keys {
		keys[i] = prefix + ":" + strconv.Itoa(i)
	}
	if err := pipelineSets(b.listen, keys); err != nil {
		t.Fatalf("%s: setting %d keys through nutcracker: %v", prefix, len(keys), err)
	}
	at := make(map[string]string, len(keys))
	seen := map[string]bool{}
	for _, n := range sm.Slots() {
		if n.IsZero() || seen[n.Addr] {
			continue
		}
		seen[n.Addr] = true
		direct := memcache.New(n.Addr)
		direct.Timeout = 2 * time.Second
		for rest := keys; len(rest) > 0; {
			chunk := rest[:min(500, len(rest))]
			rest = rest[len(chunk):]
			found, err := direct.GetMulti(chunk)
			if err != nil {
				t.Fatalf("%s: reading %s directly: %v", prefix, n.ID, err)
			}
			for k := range found {
				if other, dup := at[k]; dup {
					t.Fatalf("%s: key %s is stored on %s and on %s", prefix, k, other, n.Addr)
				}
				at[k] = n.Addr
			}
		}
	}
	if len(at) != len(keys) {
		t.Fatalf("%s: %d of %d keys set through nutcracker are on no memcached of the map", prefix, len(keys)-len(at), len(keys))
	}
	return at
}

// pipelineSets sets each key to its own name through the memcached text
// protocol at addr, every request written before the answers are read (as
// a proxy's clients pipeline), and fails unless each answer is STORED.
func pipelineSets(addr string, keys []string) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return err
	}
	written := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(conn, 64<<10)
		for _, k := range keys {
			if _, err := fmt.Fprintf(w, "set %s 0 0 %d\r\n%s\r\n", k, len(k), k); err != nil {
				written <- err
				return
			}
		}
		written <- w.Flush()
	}()
	r := bufio.NewReader(conn)
	for i, k := range keys {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("the answer to set %s (%d of %d): %w", k, i+1, len(keys), err)
		}
		if line != "STORED\r\n" {
			return fmt.Errorf("set %s answered %q", k, strings.TrimSpace(line))
		}
	}
	return <-written
}

// agree checks that the memcached storing each key, written through
// nutcracker, is the one the slot map's slot names, the one the Go client
// and the bare selector (cachenodes.Selector, for gomemcache) route to,
// and that the Go client reads the key from it.
func (b *growBed) agree(sm *cachenodes.SlotMap, prefix string) map[string]string {
	t := b.t
	t.Helper()
	at := b.holders(sm, prefix)
	c, err := mcclient.New(mcclient.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetSlotMap(sm); err != nil {
		t.Fatal(err)
	}
	sel, err := cachenodes.NewSelector(sm)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for chunk := range slices.Chunk(slices.Collect(maps.Keys(at)), 1000) {
		got, err := c.GetMulti(chunk)
		if err != nil {
			t.Fatalf("%s: reading %d keys through the Go client: %v", prefix, len(chunk), err)
		}
		for _, k := range chunk {
			addr := at[k]
			slot := sm.Slot(cachenodes.KeySlot(k, sm.NumSlots()))
			node, ok := c.NodeFor(k)
			picked, perr := sel.PickServer(k)
			it := got[k]
			if slot.Addr != addr || !ok || node.Addr != addr || perr != nil || picked.String() != addr || it == nil || string(it.Value) != k {
				if bad++; bad <= 5 {
					t.Errorf("%s: key %s is on %s; the slot map names %s, the Go client %s (%v) and reads %v, the selector %v (%v)", prefix, k, addr, slot.Addr, node.Addr, ok, it, picked, perr)
				}
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d keys disagree", prefix, bad, len(at))
	}
	return at
}

// stillThere reads the keys of an earlier stage through nutcracker and
// returns how many hit; it fails the test when a key whose memcached did
// not change misses, or a key whose slot moved (cold, to a flushed node)
// hits.
func (b *growBed) stillThere(sm *cachenodes.SlotMap, what string, at map[string]string) int {
	t := b.t
	t.Helper()
	c := memcache.New(b.listen)
	c.Timeout = 2 * time.Second
	hits := 0
	for chunk := range slices.Chunk(slices.Collect(maps.Keys(at)), 500) {
		found, err := c.GetMulti(chunk)
		if err != nil {
			t.Fatalf("%s: get through nutcracker: %v", what, err)
		}
		for _, k := range chunk {
			moved := sm.Slot(cachenodes.KeySlot(k, sm.NumSlots())).Addr != at[k]
			if _, hit := found[k]; hit == moved {
				t.Fatalf("%s: key %s, on %s before, now in a slot of %s: hit %v", what, k, at[k], sm.Slot(cachenodes.KeySlot(k, sm.NumSlots())).Addr, hit)
			} else if hit {
				hits++
			}
		}
	}
	return hits
}

// TestGrowRenderersAgree doubles a pool of 4 slots with mcrib writing a
// twemproxy and an mcrouter config, and a real nutcracker on the
// twemproxy one. Before the resize, after its first write and after each
// split (cold: twemproxy's config switches at once), 100,000 keys written
// through nutcracker are each stored on exactly the memcached that the slot
// map's slot, the Go client and the mcrouter config's server at that index
// name; the first write keeps every key written before it on its
// memcached, through nutcracker; a split leaves the keys of the other slots
// where they were.
func TestGrowRenderersAgree(t *testing.T) {
	testenv.NutcrackerBinary(t)
	const slots = 4
	p := newPool(t, 2*slots)
	dir := t.TempDir()
	b := &growBed{t: t, p: p,
		listen:     net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t))),
		nutConf:    filepath.Join(dir, "nutcracker.yml"),
		routerConf: filepath.Join(dir, "mcrouter.json"),
		runConf:    filepath.Join(dir, "nutcracker-run.yml"),
	}
	// --flush-after-unreachable 1m: this test asks where keys route, not
	// what a flush removes; under a loaded machine a probe can time out
	// for a few hundred milliseconds, and the owed flush that follows
	// would empty a holder of the keys set through nutcracker.
	b.m = startMcrib(t, p.consul.HTTPAddr, flags("--slots", strconv.Itoa(slots), "--warm-for", "0s", "--flush-after-unreachable", "1m",
		"--twemproxy-config", b.nutConf, "--twemproxy-listen", b.listen, "--mcrouter-config", b.routerConf)...)
	filled(t, p, b.m, slots)

	before := b.stage("before the resize", func(sm *cachenodes.SlotMap) bool { return sm.NumSlots() == slots })
	prev := b.agree(before, "before")

	// One twin per step; an operator freeze holds the splits while a stage
	// is checked, so every stage is seen.
	freeze := func(on bool) {
		t.Helper()
		method, body := "PUT", `{"reason": "checking a stage of the resize"}`
		if !on {
			method, body = "DELETE", ""
		}
		if code, out, _ := b.m.call(method, "/v1/freeze", body, ""); code != 200 {
			t.Fatalf("%s /v1/freeze: %d %s", method, code, out)
		}
	}
	code, body, _ := b.m.call("PUT", "/v1/resize", `{"num_slots": 8, "reason": "renderers through the doubling", "step_percent": 25, "step_interval": "3s"}`, "")
	if code != 200 {
		t.Fatalf("PUT /v1/resize: %d %s", code, body)
	}
	freeze(true)
	doubled := b.stage("after the first write", func(sm *cachenodes.SlotMap) bool {
		return sm.NumSlots() == 2*slots && sm.NumTwins() == slots
	})
	if doubled.ResizedFrom() != slots {
		t.Fatalf("the first write: resized from %d", doubled.ResizedFrom())
	}
	for s := range slots {
		if !doubled.IsTwin(s+slots) || doubled.Slot(s+slots) != doubled.Slot(s) {
			t.Fatalf("slot %d is %v, its twin %d %v", s, doubled.Slot(s), s+slots, doubled.Slot(s+slots))
		}
	}
	if hits := b.stillThere(doubled, "the keys of before, after the first write", prev); hits != growKeys {
		t.Fatalf("after the first write %d of %d keys hit through nutcracker", hits, growKeys)
	}
	prev = b.agree(doubled, "doubled")

	last := doubled
	for left := slots - 1; left >= 0; left-- {
		freeze(false)
		// The next split comes within a step interval; the freeze lands
		// well before the one after it.
		deadline := time.Now().Add(30 * time.Second)
		for {
			sm := kvSlotMap(t, p.consul.Client, "default")
			if n := sm.NumTwins(); n == left {
				break
			} else if n < left {
				t.Fatalf("the splits went from %d twins to %d before the freeze held them", left+1, n)
			}
			if time.Now().After(deadline) {
				t.Fatalf("no split to %d twins within 30 s", left)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if left > 0 {
			freeze(true)
		}
		what := fmt.Sprintf("after the split to %d twins", left)
		sm := b.stage(what, func(sm *cachenodes.SlotMap) bool { return sm.NumTwins() == left })
		moved := 0
		for i := range sm.NumSlots() {
			if sm.Slot(i) != last.Slot(i) {
				moved++
				if i < slots || last.Slot(i) != last.Slot(i-slots) {
					t.Fatalf("%s: slot %d moved from %s to %s; only a twin splits", what, i, last.Slot(i).ID, sm.Slot(i).ID)
				}
			}
		}
		if moved != 1 {
			t.Fatalf("%s: %d slots moved, want the one twin split", what, moved)
		}
		b.stillThere(sm, "the keys of the stage before, "+what, prev)
		prev = b.agree(sm, fmt.Sprintf("twins%d", left))
		last = sm
	}

	for s := range slots {
		if last.Slot(s) != before.Slot(s) {
			t.Errorf("slot %d moved from %s to %s", s, before.Slot(s).ID, last.Slot(s).ID)
		}
	}
	// A done entry is removed a step interval after the last split.
	if st := b.m.status(); st.Resize != nil && (st.Resize.Split != slots || st.Resize.Twins != 0 || st.Resize.State != mcribapi.ResizeDone) {
		t.Errorf("status resize %+v", st.Resize)
	}
}
