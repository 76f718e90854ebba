package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/leader"
)

// TestConsulACL runs mcrib against a Consul with ACLs on and denying by
// default. The policy and the tokens are made by the production page's own
// commands (docs/production.md, the block marked consul-acl: `consul acl
// policy create` with deploy/consul/mcrib-policy.hcl, one `consul acl token
// create` per host) with the consul binary; with the token of host mcrib-a,
// read from its file as the systemd unit reads it (CONSUL_HTTP_TOKEN_FILE),
// mcrib fills the map and leads; without a token it places nothing and
// reports that Consul denied it.
func TestConsulACL(t *testing.T) {
	mgmt := testenv.NewUUID(t)
	c := testenv.StartConsulACL(t, mgmt)
	buildPool(t, poolOptions{nodes: 4, consul: c})
	tokenFiles := runProductionACLStep(t, c, mgmt)

	var stored *cachenodes.SlotMap
	t.Run("token of the minimal policy", func(t *testing.T) {
		m := startMcribEnv(t, c.HTTPAddr, []string{"CONSUL_HTTP_TOKEN=", "CONSUL_HTTP_TOKEN_FILE=" + tokenFiles["mcrib-a"]}, "--slots", "4")
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
		// A second replica with host mcrib-b's token follows; both keep
		// their roles over two leader-check TTLs (the check refreshed
		// through the agent, the sessions renewed, the votes written), so
		// nothing the policy lacks shows up only later.
		other := startMcribEnv(t, c.HTTPAddr, []string{"CONSUL_HTTP_TOKEN=", "CONSUL_HTTP_TOKEN_FILE=" + tokenFiles["mcrib-b"]}, "--slots", "4")
		testenv.Eventually(t, 20*time.Second, "the second replica ready and following", func() bool {
			st := other.status()
			return other.ready() == http.StatusOK && !st.Leader && st.LeaderID == m.Addr
		})
		for until := time.Now().Add(2*leader.DefaultCheckTTL + time.Second); time.Now().Before(until); time.Sleep(200 * time.Millisecond) {
			if st := m.status(); !st.Leader || m.ready() != http.StatusOK || other.ready() != http.StatusOK {
				t.Fatalf("with the policy's tokens the leader stopped leading or a replica stopped being ready:\n%s\n%s",
					tail(m.Output(), 20), tail(other.Output(), 20))
			}
		}
		for _, r := range []*mcrib{m, other} {
			if strings.Contains(strings.ToLower(r.Output()), "permission denied") {
				t.Errorf("mcrib %s met a permission it lacks:\n%s", r.Addr, tail(r.Output(), 20))
			}
		}
		other.stop()
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
		m := startMcribEnv(t, c.HTTPAddr, []string{"CONSUL_HTTP_TOKEN=", "CONSUL_HTTP_TOKEN_FILE="}, "--slots", "4")
		var body string
		testenv.Eventually(t, 30*time.Second, "/readyz says Consul denied access", func() bool {
			code, b := m.api.get("/readyz")
			body = string(b)
			return code == http.StatusServiceUnavailable && strings.Contains(strings.ToLower(body), "permission denied")
		})
		if strings.Contains(body, c.HTTPAddr) || strings.Contains(body, "/v1/kv") || strings.Contains(body, "mcrib/default") {
			t.Errorf("/readyz %q shows Consul's address or a KV path to an unauthenticated reader", body)
		}
		if kv := kvSlotMap(t, c.Client, "default"); kv != nil && kv.Generation() != stored.Generation() {
			t.Errorf("a slot map was stored without a token: %v", kv)
		}
		if !strings.Contains(strings.ToLower(m.Output()), "permission denied") {
			t.Errorf("the log does not report the permission error:\n%s", tail(m.Output(), 20))
		}
	})
}

// runProductionACLStep runs the production page's consul-acl block with
// the consul binary as `consul`, against c with the management token mgmt,
// in a copy of the checkout's layout (deploy/ and secrets/), and returns
// the paths of the token files it wrote, by host.
func runProductionACLStep(t *testing.T, c *testenv.Consul, mgmt string) map[string]string {
	t.Helper()
	root := testenv.RepoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "production.md"))
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- production-test: consul-acl -->\n```sh\n"
	_, rest, ok := strings.Cut(string(page), marker)
	block, _, ok2 := strings.Cut(rest, "\n```\n")
	if !ok || !ok2 {
		t.Fatalf("docs/production.md has no block marked %q", marker)
	}
	work, bin := t.TempDir(), t.TempDir()
	if err := os.Symlink(filepath.Join(root, "deploy"), filepath.Join(work, "deploy")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(work, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testenv.ConsulBinary(t), filepath.Join(bin, "consul")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eu", "-o", "pipefail", "-c", block)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CONSUL_HTTP_ADDR="+c.HTTPAddr, "CONSUL_HTTP_TOKEN="+mgmt)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the consul-acl step of docs/production.md failed: %v\n%s", err, out)
	}
	files := map[string]string{}
	for _, host := range []string{"mcrib-a", "mcrib-b", "mcrib-c"} {
		path := filepath.Join(work, "secrets", "consul-token-"+host)
		files[host] = path
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("the consul-acl step wrote no token for %s: %v", host, err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v: others may read the token", path, fi.Mode())
		}
		tok, _, err := c.Client.ACL().TokenReadSelf(&api.QueryOptions{Token: strings.TrimSpace(string(b))})
		if err != nil {
			t.Fatalf("the token of %s does not work: %v", host, err)
		}
		if len(tok.Policies) != 1 || tok.Policies[0].Name != "mcrib-default" {
			t.Errorf("the token of %s has the policies %+v, want mcrib-default alone", host, tok.Policies)
		}
	}
	return files
}
