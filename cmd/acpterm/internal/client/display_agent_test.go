package client

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestDisplayCapabilities: acpterm asks for display terminals in the three
// dialects it renders: Zed's terminal_output, JetBrains'
// terminal_output_delta and the v2 draft's terminal_update. The agent is
// a shell that keeps the initialize request and exits.
func TestDisplayCapabilities(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs /bin/sh")
	}
	dir := t.TempDir()
	saved := filepath.Join(dir, "initialize.json")
	c := &Config{
		Agent:       []string{"/bin/sh", "-c", "head -n 1 > " + saved},
		Cwd:         dir,
		Prompt:      "hi",
		Format:      FormatJSON,
		InitTimeout: 10 * time.Second,
		Stdout:      &lockedBuffer{},
		Stderr:      &lockedBuffer{},
	}
	if code := Run(context.Background(), c); code == ExitOK {
		t.Fatal("a run whose agent exits at once succeeded")
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Params struct {
			ClientCapabilities struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"clientCapabilities"`
		} `json:"params"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatalf("initialize %q: %v", b, err)
	}
	for _, key := range []string{"terminal_output", "terminal_output_delta", "terminal_update"} {
		if v := string(req.Params.ClientCapabilities.Meta[key]); v != "true" {
			t.Errorf("clientCapabilities._meta.%s = %q, want true (%s)", key, v, b)
		}
	}
}
