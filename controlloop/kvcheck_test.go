package controlloop

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/internal/testenv"
)

// TestStoredDocumentsChecked runs a loop against a real Consul and damages
// its documents by hand: a corrupt freeze counts as frozen and is
// reported as corrupt; a corrupt slot map, a map of another pool and a
// map older than the one the loop knows are reported and never
// overwritten; none of them reads as "consul is unreachable".
func TestStoredDocumentsChecked(t *testing.T) {
	consul := testenv.StartConsul(t)
	c := consul.Client
	for i, id := range []string{"a", "b", "c"} {
		registerFake(t, c, id, 20000+i)
	}
	loop, err := New(Options{
		Consul: c, Pool: "p", KVPrefix: "mcrib", NumSlots: 2, Service: "memcached",
		Hold: time.Minute, ProbeInterval: 20 * time.Millisecond, MaxAbsentFraction: 0.25, MaxReplacementsPerMinute: 2,
		Prober: &fakeProber{},
	})
	if err != nil {
		t.Fatal(err)
	}
	runLoop(t, loop)
	const key, freezeKey = "mcrib/p/slotmap", "mcrib/p/freeze"
	var good []byte
	testenv.Eventually(t, 10*time.Second, "the first fill is stored", func() bool {
		p, _, err := c.KV().Get(key, nil)
		if err != nil || p == nil {
			return false
		}
		good = p.Value
		return loop.Ready() == nil
	})
	put := func(k string, v []byte) {
		t.Helper()
		if _, err := c.KV().Put(&api.KVPair{Key: k, Value: v}, nil); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() string {
		t.Helper()
		p, _, err := c.KV().Get(key, nil)
		if err != nil || p == nil {
			t.Fatalf("reading %s: %v", key, err)
		}
		return string(p.Value)
	}
	edit := func(change func(doc map[string]any)) []byte {
		var doc map[string]any
		if err := json.Unmarshal(good, &doc); err != nil {
			t.Fatal(err)
		}
		change(doc)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	t.Run("corrupt freeze counts as frozen", func(t *testing.T) {
		put(freezeKey, []byte(`{"reason": "half a docu`))
		testenv.Eventually(t, 10*time.Second, "the corrupt freeze reported", func() bool {
			st := loop.Status()
			return st.Frozen && st.ConsulReachable && slices.Equal(st.CorruptDocuments, []string{"freeze"}) &&
				strings.HasPrefix(st.LastError, "the freeze document in Consul KV is corrupt") &&
				strings.Contains(st.Freeze.Reason, "corrupt")
		})
		if _, err := c.KV().Delete(freezeKey, nil); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 10*time.Second, "the freeze lifted and the report gone", func() bool {
			st := loop.Status()
			return !st.Frozen && len(st.CorruptDocuments) == 0 && st.LastError == ""
		})
	})

	cases := []struct {
		name, want string
		value      []byte
	}{
		{"corrupt slot map", "the slotmap document in Consul KV is corrupt", []byte("{\"pool\": \"p\", \"slots\": [")},
		{"slot map of another pool", `names pool "q", not "p"`, edit(func(d map[string]any) { d["pool"] = "q" })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			put(key, tc.value)
			testenv.Eventually(t, 10*time.Second, "the refusal reported", func() bool {
				st := loop.Status()
				err := loop.Ready()
				return st.ConsulReachable && strings.Contains(st.LastError, tc.want) && err != nil && strings.Contains(err.Error(), tc.want)
			})
			if got := stored(); got != string(tc.value) {
				t.Errorf("the stored document was overwritten: %s", got)
			}
			if strings.Contains(loop.Ready().Error(), "unreachable") {
				t.Errorf("reported as unreachable: %v", loop.Ready())
			}
			put(key, good)
			testenv.Eventually(t, 10*time.Second, "ready again", func() bool { return loop.Ready() == nil && loop.Status().LastError == "" })
		})
	}

	t.Run("older generation", func(t *testing.T) {
		put(key, edit(func(d map[string]any) { d["generation"] = 5 }))
		testenv.Eventually(t, 10*time.Second, "generation 5 adopted", func() bool { return loop.Status().Generation == 5 })
		older := edit(func(d map[string]any) { d["generation"] = 3 })
		put(key, older)
		testenv.Eventually(t, 10*time.Second, "the older map refused", func() bool {
			st := loop.Status()
			return strings.Contains(st.LastError, "generation 3, older than generation 5") && st.Generation == 5
		})
		if got := stored(); got != string(older) {
			t.Errorf("the older map was overwritten: %s", got)
		}
	})
}

// TestEveryCheckedDocumentIsReportedCorrupt writes a corrupt copy of each
// document kvlayout.Checked names into a real Consul, one at a time, and
// reads the pool through ConsulStore: each is named in Snapshot.Corrupt
// (the status's corrupt_documents, the gauge's label), and nothing else is.
func TestEveryCheckedDocumentIsReportedCorrupt(t *testing.T) {
	consul := testenv.StartConsul(t)
	c := consul.Client
	store := NewConsulStore(c, "mcrib", "p")
	keys := kvlayout.For("mcrib", "p")
	for _, name := range kvlayout.Checked() {
		t.Run(name, func(t *testing.T) {
			if _, err := c.KV().DeleteTree(keys.Prefix(), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.KV().Put(&api.KVPair{Key: keys.Key(name), Value: []byte("{not json")}, nil); err != nil {
				t.Fatal(err)
			}
			st, err := store.Read(context.Background())
			var ce *CorruptError
			if errors.As(err, &ce) {
				st.Corrupt = ce.Keys
			} else if err != nil {
				t.Fatalf("reading: %v", err)
			}
			if !slices.Equal(st.Corrupt, []string{name}) {
				t.Fatalf("a corrupt %s document: Corrupt = %v, want [%s]", name, st.Corrupt, name)
			}
		})
	}
}
