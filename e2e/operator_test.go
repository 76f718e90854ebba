package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

const token = "s3cret-operator-token"

// withToken starts mcrib with the operator token in a token file.
func withToken(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--token-file", path}
}

// TestFreezeBlocksReplacement: while frozen, a dead serving node keeps its
// slot past the hold; unfreezing lets the replacement happen.
func TestFreezeBlocksReplacement(t *testing.T) {
	p := newPool(t, 6)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", "4", "--hold", "1s")...)...)
	before := filled(t, p, m, 4)
	code, body, _ := m.call("PUT", "/v1/freeze", `{"reason":"incident 42: consul rollout"}`, token)
	if code != 200 {
		t.Fatalf("PUT /v1/freeze: %d %s", code, body)
	}
	doc, err := decodeAs[mcribapi.FreezeDoc](body, "PUT /v1/freeze")
	if err != nil || !doc.Frozen || doc.Reason != "incident 42: consul rollout" || doc.By == "" || doc.At.IsZero() {
		t.Fatalf("freeze document %s (%v)", body, err)
	}
	victim := before.Slot(0)
	p.nodes[victim.ID].Kill(t)
	testenv.Eventually(t, 10*time.Second, "the dead node seen unreachable and absent", func() bool {
		n, ok := nodeStatus(m.status(), victim.ID)
		return ok && !n.Reachable && n.Consul == mcribapi.ConsulAbsent
	})
	time.Sleep(3 * time.Second) // three holds
	st := m.status()
	if !st.Frozen || st.Freeze == nil || st.Freeze.Reason != doc.Reason {
		t.Fatalf("status does not show the freeze: %+v", st)
	}
	if st.ReplacementsBlocked < 1 {
		t.Fatalf("replacements_blocked %d, want >= 1", st.ReplacementsBlocked)
	}
	if n, _ := nodeStatus(st, victim.ID); n.HoldRemainingSeconds == nil || *n.HoldRemainingSeconds != 0 {
		t.Fatalf("the dead node's hold_remaining_seconds is %v, want 0 (due, held back by the freeze)", n.HoldRemainingSeconds)
	}
	sameSlots(t, "while frozen", before, m.slotMap())

	if code, body, _ := m.call("DELETE", "/v1/freeze", "", token); code != 200 || !strings.Contains(string(body), `"frozen":false`) {
		t.Fatalf("DELETE /v1/freeze: %d %s", code, body)
	}
	// Announced once the freeze lifts, served 12 s later (docs/api.md,
	// "Announce, then serve").
	testenv.Eventually(t, 10*time.Second+cachenodes.AnnounceLead, "the dead node replaced after unfreeze", func() bool {
		sm := m.slotMap()
		return sm != nil && sm.Slot(0).ID != victim.ID && !sm.Slot(0).IsZero()
	})
}

// TestFreezeSurvivesRestart: the freeze is in KV, so a restarted process
// obeys it.
func TestFreezeSurvivesRestart(t *testing.T) {
	p := newPool(t, 5)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4")...)
	filled(t, p, m, 4)
	if code, body, _ := m.call("PUT", "/v1/freeze", `{"reason":"hold still"}`, ""); code != 200 {
		t.Fatalf("PUT /v1/freeze: %d %s", code, body)
	}
	m.restart()
	testenv.Eventually(t, 10*time.Second, "frozen after the restart", func() bool {
		st := m.status()
		return st.Frozen && st.Freeze != nil && st.Freeze.Reason == "hold still"
	})
}

// TestOperatorInputIsChecked: the token, bad bodies, large bodies and
// wrong methods are refused, and the freeze state is unchanged after each.
func TestOperatorInputIsChecked(t *testing.T) {
	p := newPool(t, 4)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", "4")...)...)
	filled(t, p, m, 4)
	frozen := func() bool { return m.status().Frozen }
	check := func(name, method, path, body, tok string, want int) {
		t.Helper()
		wasFrozen := frozen()
		code, resp, _ := m.call(method, path, body, tok)
		if code != want {
			t.Errorf("%s: status %d, want %d (%s)", name, code, want, resp)
			return
		}
		if !isErrorBody(resp) {
			t.Errorf("%s: body %q is not {\"error\": \"<one sentence>\"}", name, resp)
		}
		if frozen() != wasFrozen {
			t.Errorf("%s: the freeze state changed", name)
		}
	}
	big := `{"reason":"` + strings.Repeat("x", 70<<10) + `"}`
	for _, state := range []string{"unfrozen", "frozen"} {
		check("no token", "PUT", "/v1/freeze", `{"reason":"x"}`, "", 401)
		check("wrong token", "PUT", "/v1/freeze", `{"reason":"x"}`, "nope", 401)
		check("no token, unfreeze", "DELETE", "/v1/freeze", "", "", 401)
		check("malformed JSON", "PUT", "/v1/freeze", `{"reason":`, token, 400)
		check("unknown field", "PUT", "/v1/freeze", `{"reason":"x","until":"later"}`, token, 400)
		check("empty reason", "PUT", "/v1/freeze", `{"reason":""}`, token, 400)
		check("no reason", "PUT", "/v1/freeze", `{}`, token, 400)
		check("reason not a string", "PUT", "/v1/freeze", `{"reason":42}`, token, 400)
		check("over-long reason", "PUT", "/v1/freeze", `{"reason":"`+strings.Repeat("r", 513)+`"}`, token, 400)
		check("body over 64 KiB", "PUT", "/v1/freeze", big, token, 413)
		check("wrong method", "POST", "/v1/freeze", `{"reason":"x"}`, token, 405)
		check("wrong method on slotmap", "DELETE", "/v1/slotmap", "", token, 405)
		check("unknown path", "GET", "/v1/nothing", "", "", 404)
		if state == "unfrozen" {
			if code, body, _ := m.call("PUT", "/v1/freeze", `{"reason":"`+strings.Repeat("r", 512)+`"}`, token); code != 200 {
				t.Fatalf("a 512-character reason: %d %s", code, body)
			}
		}
	}
	if st := m.status(); !st.Frozen || !strings.HasPrefix(st.Freeze.By, "operator") {
		t.Fatalf("freeze by %+v, want the operator token named", st.Freeze)
	}
	if !strings.Contains(m.Output(), "operator change") {
		t.Fatalf("no operator change logged:\n%s", tail(m.Output(), 20))
	}
}

// TestReplicasElectOneLeader runs two replicas: one leads; after kill -9
// of the leader the other takes over and changes nothing.
func TestReplicasElectOneLeader(t *testing.T) {
	p := newPool(t, 6)
	a := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--hold", "5s")...)
	before := filled(t, p, a, 4)
	b := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--hold", "5s")...)
	var lead, follow *mcrib
	testenv.Eventually(t, 15*time.Second, "exactly one leader, known to both", func() bool {
		sa, sb := a.status(), b.status()
		if sa.Leader == sb.Leader || sa.LeaderID == "" || sa.LeaderID != sb.LeaderID {
			return false
		}
		lead, follow = a, b
		if sb.Leader {
			lead, follow = b, a
		}
		return lead.status().LeaderID == lead.Addr
	})
	sameSlots(t, "on the follower", before, follow.slotMap())

	// A mutating call sent to the follower: stored in KV, obeyed by all.
	code, body, _ := follow.call("PUT", "/v1/freeze", `{"reason":"via the follower"}`, "")
	if code != 200 {
		t.Fatalf("PUT /v1/freeze on the follower: %d %s", code, body)
	}
	testenv.Eventually(t, 10*time.Second, "the leader sees the freeze", func() bool { return lead.status().Frozen })
	if code, body, _ := follow.call("DELETE", "/v1/freeze", "", ""); code != 200 {
		t.Fatalf("DELETE /v1/freeze on the follower: %d %s", code, body)
	}
	testenv.Eventually(t, 10*time.Second, "the leader sees the unfreeze", func() bool { return !lead.status().Frozen })

	// Boots sent to either replica share one pool-wide limit.
	if code, body, _ := follow.call("PUT", "/v1/ratelimit", `{"mode":"manual","limit":5,"burst":5}`, ""); code != 200 {
		t.Fatalf("PUT /v1/ratelimit on the follower: %d %s", code, body)
	}
	testenv.Eventually(t, 10*time.Second, "both replicas enforce 5/s", func() bool {
		a, errA := lead.api.bootLimit()
		b, errB := follow.api.bootLimit()
		return errA == nil && errB == nil && a.Limit == 5 && b.Limit == 5
	})
	time.Sleep(time.Second) // refill the bucket
	admitted := 0
	for i := range 40 {
		target := lead
		if i%2 == 1 {
			target = follow
		}
		if code, _, _ := target.call("POST", "/v1/boot", "", ""); code == 200 {
			admitted++
		}
	}
	if admitted < 5 || admitted > 7 {
		t.Fatalf("40 rapid boots over both replicas admitted %d, want 5 to 7 (one pool-wide limit)", admitted)
	}

	killed := time.Now()
	lead.Kill(t)
	testenv.Eventually(t, 20*time.Second, "the follower takes over", func() bool {
		st := follow.status()
		return st.Leader && st.LeaderID == follow.Addr
	})
	took := time.Since(killed)
	t.Logf("takeover after kill -9 took %s", took)
	if took > 3*time.Second+3*time.Second+5*time.Second {
		t.Fatalf("takeover took %s, more than lock-delay + check TTL + a few seconds", took)
	}
	testenv.Eventually(t, 10*time.Second, "the new leader reconciled", func() bool { return follow.ready() == 200 })
	time.Sleep(time.Second)
	sameSlots(t, "after the takeover", before, follow.slotMap())
	sameSlots(t, "in Consul KV after the takeover", before, kvSlotMap(t, p.consul.Client, "default"))
	noFlushes(t, p, "after the takeover")
}

// TestDeposedLeaderStepsDown invalidates the leader's session by hand: it
// stops leading at once, and a map written by hand is not overwritten.
func TestDeposedLeaderStepsDown(t *testing.T) {
	p := newPool(t, 5)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4")...)
	filled(t, p, m, 4)
	testenv.Eventually(t, 10*time.Second, "leading", func() bool { return m.status().Leader })
	kv, _, err := p.consul.Client.KV().Get("mcrib/default/leader", nil)
	if err != nil || kv == nil || kv.Session == "" {
		t.Fatalf("leader key %+v %v", kv, err)
	}
	if _, err := p.consul.Client.Session().Destroy(kv.Session, nil); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "stepped down", func() bool { return !m.status().Leader })
	testenv.Eventually(t, 20*time.Second, "leading again with a new session", func() bool {
		kv2, _, err := p.consul.Client.KV().Get("mcrib/default/leader", nil)
		return err == nil && kv2 != nil && kv2.Session != "" && kv2.Session != kv.Session && m.status().Leader
	})
}

// TestCLI runs the client commands against a running server.
func TestCLI(t *testing.T) {
	p := newPool(t, 5)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", "4")...)...)
	filled(t, p, m, 4)
	tok := []string{"MCRIB_TOKEN=" + token}
	for _, tc := range []struct {
		env      []string
		args     []string
		code     int
		out, err string
	}{
		{nil, []string{"status"}, 0, "mc-0", ""},
		{nil, []string{"status", "--json"}, 0, `"pool":"default"`, ""},
		{nil, []string{"slots"}, 0, "mc-0", ""},
		{nil, []string{"slots", "--json"}, 0, `"num_slots":4`, ""},
		{nil, []string{"freeze", "--reason", "cli test"}, 1, "", "set MCRIB_TOKEN (or --token-file) to the operator token"},
		{tok, []string{"freeze"}, 2, "", ""},
		{tok, []string{"--who", "alice@laptop", "freeze", "--reason", "cli test"}, 0, "cli test (by alice@laptop)", ""},
		{nil, []string{"status"}, 0, `"cli test" by alice@laptop`, ""},
		{nil, []string{"events"}, 0, "alice@laptop", ""},
		{tok, []string{"freeze", "--who", "bob@desk", "--reason", "mine now"}, 1, "", `frozen already, by alice@laptop`},
		{nil, []string{"status"}, 0, `"cli test" by alice@laptop`, ""},
		{tok, []string{"freeze", "--who", "bob@desk", "--force", "--reason", "mine now", "--json"}, 0, `"by":"bob@desk"`, ""},
		{tok, []string{"unfreeze", "--json"}, 0, `"frozen":false`, ""},
		{tok, []string{"freeze", "--reason", "cli test"}, 0, "cli test", ""},
		{nil, []string{"status"}, 0, "cli test", ""},
		{tok, []string{"unfreeze"}, 0, "unfrozen", ""},
		{nil, []string{"stauts"}, 2, "", `did you mean "status"?`},
		{nil, []string{"--addr", "http://" + m.Addr, "status", "--jsno"}, 2, "", "did you mean --json?"},
		{nil, []string{"help", "freeze"}, 0, "--force", ""},
		{nil, []string{"ratelimit"}, 0, "auto", ""},
		{tok, []string{"ratelimit", "set", "5"}, 0, "manual", ""},
		{tok, []string{"ratelimit", "set", "-5"}, 2, "", ""},
		{tok, []string{"ratelimit", "set", "many"}, 2, "", ""},
		{tok, []string{"ratelimit", "auto"}, 0, "auto", ""},
		{nil, []string{"version"}, 0, "mcrib", ""},
		{nil, []string{"bogus"}, 2, "", ""},
		{[]string{"MCRIB_ADDR=http://127.0.0.1:1"}, []string{"status"}, 1, "", "connection refused; check --addr / MCRIB_ADDR"},
	} {
		code, out, errOut := runCLI(t, m.Addr, append(tc.env, "MCRIB_TOKEN="+tokenOf(tc.env)), tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) {
			t.Errorf("mcrib %s: exit %d, stdout %q, stderr %q; want exit %d, stdout containing %q, stderr containing %q",
				strings.Join(tc.args, " "), code, out, errOut, tc.code, tc.out, tc.err)
		}
	}
	if st := m.status(); st.Frozen {
		t.Fatalf("still frozen after mcrib unfreeze")
	}
	// The last reconcile as an age, and the time to the second.
	_, out, _ := runCLI(t, m.Addr, nil, "status")
	if !regexp.MustCompile(`\nlast reconcile: +(just now|[0-9]+ s ago), at [0-9-]{10}T[0-9:]{8}Z\n`).MatchString(out) {
		t.Errorf("mcrib status does not tell the last reconcile as a recent age:\n%s", out)
	}
	fmt.Fprintln(os.Stderr) // keep the test output readable
}

func tokenOf(env []string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "MCRIB_TOKEN="); ok {
			return v
		}
	}
	return ""
}

var _ = http.StatusOK
