package apibody

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type brokenBody struct{}

func (brokenBody) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
func (brokenBody) Close() error             { return nil }

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, body, contentType string
		broken                  bool
		wantErr                 error
		wantStatus              int
	}{
		{name: "empty, no type"},
		{name: "empty, text/plain", contentType: "text/plain"},
		{name: "json", body: `{}`, contentType: "application/json"},
		{name: "json, charset", body: `{}`, contentType: "application/json;charset=UTF-8"},
		{name: "json, capitals and spaces", body: `{}`, contentType: " APPLICATION/Json ; charset=utf-8"},
		{name: "text/plain", body: `{}`, contentType: "text/plain", wantErr: ErrNotJSON, wantStatus: 415},
		{name: "no type", body: `{}`, wantErr: ErrNotJSON, wantStatus: 415},
		{name: "a json suffix", body: `{}`, contentType: "application/problem+json", wantErr: ErrNotJSON, wantStatus: 415},
		{name: "exactly the limit", body: strings.Repeat("x", MaxBytes), contentType: "application/json"},
		{name: "over the limit, any type", body: strings.Repeat("x", MaxBytes+1), contentType: "text/plain", wantErr: ErrTooLarge, wantStatus: 413},
		{name: "truncated", broken: true, contentType: "application/json", wantErr: ErrUnreadable, wantStatus: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPut, "/v1/freeze", strings.NewReader(tc.body))
			if tc.broken {
				req.Body = brokenBody{}
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			body, err := Read(httptest.NewRecorder(), req)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if Status(err) != tc.wantStatus || strings.Contains(Sentence(err), "apibody:") {
					t.Errorf("status %d, sentence %q; want %d and no package prefix", Status(err), Sentence(err), tc.wantStatus)
				}
				return
			}
			if string(body) != tc.body {
				t.Errorf("read %d bytes, want %d", len(body), len(tc.body))
			}
		})
	}
	if Status(errors.New("other")) != 0 {
		t.Error("another error has a status")
	}
}
