package leader

import (
	"testing"

	"github.com/hashicorp/consul/api"
)

func TestHolder(t *testing.T) {
	tests := []struct {
		name       string
		kv         *api.KVPair
		session    string
		wantID     string
		wantHeldBy bool
	}{
		{"absent", nil, "s1", "", false},
		{"free", &api.KVPair{Value: []byte("a:1")}, "s1", "", false},
		{"held by us", &api.KVPair{Value: []byte("a:1"), Session: "s1"}, "s1", "a:1", true},
		{"held by another", &api.KVPair{Value: []byte("b:1"), Session: "s2"}, "s1", "b:1", false},
		{"free, empty session asked", &api.KVPair{Value: []byte("a:1")}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := holderID(tt.kv); got != tt.wantID {
				t.Errorf("holderID = %q, want %q", got, tt.wantID)
			}
			if got := heldBy(tt.kv, tt.session); got != tt.wantHeldBy {
				t.Errorf("heldBy(%q) = %v, want %v", tt.session, got, tt.wantHeldBy)
			}
		})
	}
}

func TestSameHolder(t *testing.T) {
	a := &api.KVPair{Value: []byte("a:1"), Session: "s1", ModifyIndex: 5}
	tests := []struct {
		name string
		x, y *api.KVPair
		want bool
	}{
		{"both absent", nil, nil, true},
		{"absent and present", nil, a, false},
		{"present and absent", a, nil, false},
		{"same holder, other index", a, &api.KVPair{Value: []byte("a:1"), Session: "s1", ModifyIndex: 9}, true},
		{"other session", a, &api.KVPair{Value: []byte("a:1"), Session: "s2"}, false},
		{"released", a, &api.KVPair{Value: []byte("a:1")}, false},
		{"other value", a, &api.KVPair{Value: []byte("b:1"), Session: "s1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameHolder(tt.x, tt.y); got != tt.want {
				t.Errorf("sameHolder = %v, want %v", got, tt.want)
			}
		})
	}
}
