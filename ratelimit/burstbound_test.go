package ratelimit

import (
	"errors"
	"testing"
)

// TestBurstBound checks that no burst above 1e9 gets in: not through a
// request body, not from a stored document.
func TestBurstBound(t *testing.T) {
	for _, body := range []string{
		`{"mode": "auto", "burst": 1000000001}`,
		`{"mode": "manual", "limit": 5, "burst": 2000000000}`,
		`{"mode": "auto", "burst": 1e12}`,
	} {
		if _, err := ParseSetting([]byte(body)); !errors.Is(err, ErrInvalidSetting) {
			t.Errorf("ParseSetting(%s) = %v, want ErrInvalidSetting", body, err)
		}
	}
	if _, err := ParseSetting([]byte(`{"mode": "auto", "burst": 1000000000}`)); err != nil {
		t.Errorf("a burst of 1e9 refused: %v", err)
	}
	for _, doc := range []string{
		`{"mode": "auto", "limit": 10, "burst": 1, "auto_burst": 1000000001}`,
		`{"mode": "auto", "limit": 10, "burst": 1, "auto_burst": -1}`,
		`{"mode": "auto", "limit": 10, "burst": 1000000001}`,
	} {
		if _, err := ParseDocument([]byte(doc)); !errors.Is(err, ErrBadDocument) {
			t.Errorf("ParseDocument(%s) = %v, want ErrBadDocument", doc, err)
		}
	}
}
