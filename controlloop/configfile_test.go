package controlloop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, path string) // prepares path before the write
		wantErr string                          // "" for success
		want    string                          // what path holds afterwards ("" for a directory)
	}{
		{name: "a new file", want: "new"},
		{name: "replaces a file, whatever its mode",
			setup: func(t *testing.T, path string) { mustWrite(t, path, "old", 0o600) },
			want:  "new"},
		{name: "a missing directory",
			setup:   func(t *testing.T, path string) { os.RemoveAll(filepath.Dir(path)) },
			wantErr: "no such file or directory"},
		{name: "a directory in the way",
			setup: func(t *testing.T, path string) {
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
				mustWrite(t, filepath.Join(path, "inside"), "x", 0o644)
			},
			wantErr: "writing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "conf")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "router.json")
			if tt.setup != nil {
				tt.setup(t, path)
			}
			err := WriteFileAtomic(path, []byte("new"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), path) {
					t.Fatalf("WriteFileAtomic error %v, want one naming %s and containing %q", err, path, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("WriteFileAtomic: %v", err)
			}
			if tt.want != "" {
				got, err := os.ReadFile(path)
				if err != nil || string(got) != tt.want {
					t.Errorf("the file holds %q (%v), want %q", got, err, tt.want)
				}
				if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("the file's mode is %v (%v), want 0644", fi.Mode().Perm(), err)
				}
			}
			// No temporary file is left behind, written or not.
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != "router.json" {
					t.Errorf("%s left in the directory", e.Name())
				}
			}
		})
	}
}

func mustWrite(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
