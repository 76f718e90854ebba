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
