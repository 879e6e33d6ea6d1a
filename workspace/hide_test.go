package workspace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/sandbox"
	"github.com/acpterm/acpterm/workspace"
)

// TestHide: fs/* refuses, for reading and writing, what Hide hides (a
// workspace that is the home directory, with its ~/.ssh), by name or
// through a symlink, and serves what it shows.
func TestHide(t *testing.T) {
	t.Parallel()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ssh := filepath.Join(home, ".ssh")
	if err := os.Mkdir(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"id_ed25519": "SECRET", "known_hosts": "PUBLIC"} {
		if err := os.WriteFile(filepath.Join(ssh, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(ssh, filepath.Join(home, "keys")); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.NewWorkspace([]string{home}, &workspace.WritePolicy{Mode: sandbox.WorkspaceWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.Hide([]string{ssh}, []string{filepath.Join(ssh, "known_hosts")})
	ctx := context.Background()
	for _, p := range []string{filepath.Join(ssh, "id_ed25519"), filepath.Join(home, "keys", "id_ed25519")} {
		if _, err := ws.ReadTextFile(ctx, &acp.ReadTextFileRequest{Path: p}); !errors.Is(err, acp.ErrPermissionDenied) {
			t.Errorf("read %s: %v, want permission denied", p, err)
		}
	}
	if _, err := ws.WriteTextFile(ctx, &acp.WriteTextFileRequest{Path: filepath.Join(ssh, "authorized_keys"), Content: "k"}); !errors.Is(err, acp.ErrPermissionDenied) {
		t.Errorf("write into ~/.ssh: %v, want permission denied", err)
	}
	if _, err := os.Stat(filepath.Join(ssh, "authorized_keys")); err == nil {
		t.Error("authorized_keys was written")
	}
	r, err := ws.ReadTextFile(ctx, &acp.ReadTextFileRequest{Path: filepath.Join(ssh, "known_hosts")})
	if err != nil || r.Content != "PUBLIC" {
		t.Errorf("known_hosts: %v, %v", r, err)
	}
}
