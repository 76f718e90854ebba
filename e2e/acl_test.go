package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
)

// mcribACLRules is the minimal Consul ACL policy of `mcrib serve` for the
// pool "default" under the KV prefix "mcrib", service "memcached"; the
// README quotes it.
const mcribACLRules = `
key_prefix "mcrib/default/" { policy = "write" }
session_prefix "" { policy = "write" }
service "mcrib-leader" { policy = "write" }
service "memcached" { policy = "read" }
node_prefix "" { policy = "read" }
`

// TestConsulACL runs mcrib against a Consul with ACLs on and denying by
// default: with a token of the minimal policy (CONSUL_HTTP_TOKEN) it fills
// the map; without a token it places nothing and reports that Consul
// denied it.
func TestConsulACL(t *testing.T) {
	mgmt := testenv.NewUUID(t)
	c := testenv.StartConsulACL(t, mgmt)
	ids := []string{"mc-01", "mc-02", "mc-03", "mc-04"}
	for i, id := range ids {
		m := testenv.StartMemcached(t)
		testenv.Register(t, c.Client, m, testenv.Registration{ID: id, Meta: map[string]string{"az": string(rune('a' + i%2))}})
	}
	if _, _, err := c.Client.ACL().PolicyCreate(&api.ACLPolicy{Name: "mcrib", Rules: mcribACLRules}, nil); err != nil {
		t.Fatalf("creating the mcrib policy: %v", err)
	}
	tok, _, err := c.Client.ACL().TokenCreate(&api.ACLToken{Description: "mcrib", Policies: []*api.ACLTokenPolicyLink{{Name: "mcrib"}}}, nil)
	if err != nil {
		t.Fatalf("creating the mcrib token: %v", err)
	}

	var stored *cachenodes.SlotMap
	t.Run("token of the minimal policy", func(t *testing.T) {
		m := startMcribEnv(t, c.HTTPAddr, []string{"CONSUL_HTTP_TOKEN=" + tok.SecretID}, "--slots", "4")
		testenv.Eventually(t, 30*time.Second, "all 4 slots filled and stored", func() bool {
			sm := m.slotMap()
			if sm == nil {
				return false
			}
			for _, n := range sm.Slots() {
				if n.IsZero() {
					return false
				}
			}
			kv := kvSlotMap(t, c.Client, "default")
			return kv != nil && kv.Equal(sm)
		})
		testenv.Eventually(t, 20*time.Second, "ready and leading", func() bool {
			return m.ready() == http.StatusOK && m.status().Leader
		})
		if code, body, _ := m.call(http.MethodPut, "/v1/freeze", `{"reason":"acl test"}`, ""); code != http.StatusOK {
			t.Fatalf("freeze with the policy's token: %d %s", code, body)
		}
		if code, body, _ := m.call(http.MethodDelete, "/v1/freeze", "", ""); code != http.StatusOK {
			t.Fatalf("unfreeze with the policy's token: %d %s", code, body)
		}
		m.stop()
		stored = kvSlotMap(t, c.Client, "default")
	})
	if stored == nil {
		t.Fatal("no slot map stored with the policy's token")
	}

	t.Run("no token", func(t *testing.T) {
		m := startMcribEnv(t, c.HTTPAddr, []string{"CONSUL_HTTP_TOKEN="}, "--slots", "4")
		var body string
		testenv.Eventually(t, 30*time.Second, "/readyz says Consul denied access", func() bool {
			resp, err := http.Get(m.url("/readyz"))
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(strings.ToLower(body), "permission denied")
		})
		if strings.Contains(body, c.HTTPAddr) || strings.Contains(body, "/v1/kv") || strings.Contains(body, "mcrib/default") {
			t.Errorf("/readyz %q shows Consul's address or a KV path to an unauthenticated reader", body)
		}
		if kv := kvSlotMap(t, c.Client, "default"); kv != nil && kv.Generation() != stored.Generation() {
			t.Errorf("a slot map was stored without a token: %v", kv)
		}
		if !strings.Contains(strings.ToLower(m.log.String()), "permission denied") {
			t.Errorf("the log does not report the permission error:\n%s", tail(m.log.String(), 20))
		}
	})
}

// startMcribEnv starts `mcrib serve` like startMcrib with env added to the
// environment.
func startMcribEnv(t *testing.T, consulAddr string, env []string, flags ...string) *mcrib {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	m := &mcrib{t: t, Addr: addr, log: &syncBuffer{}, env: env}
	m.args = append([]string{"serve", "--consul", consulAddr, "--listen", addr}, flags...)
	m.start()
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			t.Logf("mcrib %s log:\n%s", m.Addr, tail(m.log.String(), 60))
		}
	})
	return m
}
