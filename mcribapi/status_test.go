package mcribapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestStatusKeysInOrder pins the status document's keys and their order,
// as mcrib has always sent them: hit_rate and boot_limit come last (the
// server adds them to the loop's status).
func TestStatusKeysInOrder(t *testing.T) {
	b, err := json.Marshal(Status{CorruptDocuments: []string{"drain"}, ZoneAlert: "zone b"})
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var keys []string
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	want := "pool leader leader_id frozen freeze auto_frozen auto_freeze_reason generation last_reconcile_at " +
		"consul_reachable nodes discovery_fault discovery_fault_reason replacements_blocked last_error vacant_slots " +
		"num_slots slots_unserved corrupt_documents zones zone_alert resize roll capacity hit_rate boot_limit gets_per_second flags"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("status keys\n %s\nwant\n %s", got, want)
	}
}
