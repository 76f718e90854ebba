package kvlayout

import "testing"

func TestFor(t *testing.T) {
	tests := []struct {
		kvPrefix, pool string
		wantPrefix     string
	}{
		{"mcrib", "default", "mcrib/default/"},
		{"/mcrib/", "default", "mcrib/default/"},
		{"a/b", "p", "a/b/p/"},
	}
	for _, tt := range tests {
		p := For(tt.kvPrefix, tt.pool)
		if got := p.Prefix(); got != tt.wantPrefix {
			t.Errorf("For(%q, %q).Prefix() = %q, want %q", tt.kvPrefix, tt.pool, got, tt.wantPrefix)
		}
		for key, want := range map[string]string{
			p.SlotMap():   tt.wantPrefix + "slotmap",
			p.Freeze():    tt.wantPrefix + "freeze",
			p.BootLimit(): tt.wantPrefix + "bootlimit",
			p.Drain():     tt.wantPrefix + "drain",
			p.Leader():    tt.wantPrefix + "leader",
		} {
			if key != want {
				t.Errorf("key %q, want %q", key, want)
			}
			name, ok := p.Name(key)
			if !ok || tt.wantPrefix+name != key {
				t.Errorf("Name(%q) = %q, %v", key, name, ok)
			}
		}
		if _, ok := p.Name("elsewhere/slotmap"); ok {
			t.Errorf("Name of a key outside the pool reported it inside")
		}
	}
}

func TestVoteKeys(t *testing.T) {
	p := For("mcrib", "default")
	key := p.Vote("198.18.0.2:7070")
	if key != "mcrib/default/unreachable/198.18.0.2:7070" {
		t.Fatalf("Vote = %q", key)
	}
	name, _ := p.Name(key)
	if r, ok := p.VoteReplica(name); !ok || r != "198.18.0.2:7070" {
		t.Fatalf("VoteReplica(%q) = %q, %v", name, r, ok)
	}
	for _, name := range []string{"slotmap", "unreachable/", "unreachablex/a"} {
		if _, ok := p.VoteReplica(name); ok {
			t.Errorf("VoteReplica(%q) took it for a vote", name)
		}
	}
}
