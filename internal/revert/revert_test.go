package revert

import "testing"

func TestSetRevertsOnlyItsFixes(t *testing.T) {
	s := Of(FollowerFlush, WarmFromOwing)
	for _, f := range All() {
		want := f == FollowerFlush || f == WarmFromOwing
		if got := s.Reverted(f); got != want {
			t.Errorf("Of(follower-flush, warm-from-owing).Reverted(%v) = %v, want %v", f, got, want)
		}
	}
	if got := s.String(); got != "follower-flush,warm-from-owing" {
		t.Errorf("String() = %q", got)
	}
	var zero Set
	for _, f := range All() {
		if zero.Reverted(f) {
			t.Errorf("the zero Set reverts %v", f)
		}
	}
}

func TestParseNamesEveryFix(t *testing.T) {
	for _, f := range All() {
		got, err := Parse(f.String())
		if err != nil || got != f {
			t.Errorf("Parse(%q) = %v, %v; want %v", f.String(), got, err, f)
		}
	}
	if _, err := Parse("no-such-fix"); err == nil {
		t.Error("Parse of an unknown name did not fail")
	}
}

type holder struct{ s Set }

func TestApplyReachesTheRegisteredHook(t *testing.T) {
	Register(func(obj any, s Set) bool {
		h, ok := obj.(*holder)
		if ok {
			h.s = s
		}
		return ok
	})
	h := &holder{}
	Apply(h, Of(GenerationOrder))
	if h.s != Of(GenerationOrder) {
		t.Errorf("Apply set %v, want generation-order", h.s)
	}
	defer func() {
		if recover() == nil {
			t.Error("Apply to an object no package knows did not panic")
		}
	}()
	Apply(&struct{}{}, Of(GenerationOrder))
}
