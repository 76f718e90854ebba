package consulcall

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestLimit(t *testing.T) {
	tr := &Transport{Timeout: 10 * time.Second}
	tests := []struct {
		url  string
		want time.Duration
	}{
		{"http://c/v1/kv/a", 10 * time.Second},
		{"http://c/v1/kv/a?recurse=", 10 * time.Second},
		{"http://c/v1/kv/a?index=7&wait=16000ms", 16*time.Second + time.Second + 10*time.Second},
		{"http://c/v1/health/service/m?index=7", 5*time.Minute + 5*time.Minute/16 + 10*time.Second},
		{"http://c/v1/health/service/m?index=7&wait=1h", 5*time.Minute + 5*time.Minute/16 + 10*time.Second},
		{"http://c/v1/health/service/m?index=7&wait=soon", 5*time.Minute + 5*time.Minute/16 + 10*time.Second},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, tt.url, nil)
		if got := tr.Limit(req); got != tt.want {
			t.Errorf("Limit(%s) = %v, want %v", tt.url, got, tt.want)
		}
	}
	if got := (&Transport{}).Limit(httptest.NewRequest(http.MethodGet, "/v1/kv/a", nil)); got != DefaultTimeout {
		t.Errorf("zero Timeout: %v, want %v", got, DefaultTimeout)
	}
}

// TestSilentConsul checks that a server that takes the request and never
// answers fails the call with ErrTimeout once the deadline passes.
func TestSilentConsul(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := &http.Client{Transport: &Transport{Timeout: 50 * time.Millisecond}}
	start := time.Now()
	resp, err := c.Get(srv.URL + "/v1/kv/mcrib/default/?recurse=")
	if err == nil {
		resp.Body.Close()
		t.Fatal("a silent server answered")
	}
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("error %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v", d)
	}
}

// TestAnswerRead checks that an answer's body can be read after RoundTrip
// returned (the deadline ends at Close, not before).
func TestAnswerRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"Key":"a"}]`))
	}))
	defer srv.Close()
	c := &http.Client{Transport: &Transport{}}
	resp, err := c.Get(srv.URL + "/v1/kv/a")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 64)
	n, _ := resp.Body.Read(b)
	if string(b[:n]) != `[{"Key":"a"}]` {
		t.Errorf("body %q", b[:n])
	}
}
