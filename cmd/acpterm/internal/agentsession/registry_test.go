package agentsession

import (
	"errors"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

func TestRegistry(t *testing.T) {
	var r Registry
	if _, err := r.New("relative"); !errors.Is(err, acp.ErrInvalidParams) {
		t.Fatalf("relative cwd: %v", err)
	}
	for _, cwd := range []string{"/w", `C:\w`, "D:/w"} {
		if _, err := r.New(cwd); err != nil {
			t.Errorf("New(%q): %v", cwd, err)
		}
	}
	id, err := r.New("/work")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Begin("nope", "a prompt"); !errors.Is(err, acp.ErrInvalidParams) {
		t.Errorf("unknown session: %v", err)
	}
	cwd, end, err := r.Begin(id, "a prompt")
	if err != nil || cwd != "/work" {
		t.Fatalf("Begin = %q, %v", cwd, err)
	}
	if _, _, err := r.Begin(id, "a prompt"); err == nil || err.Error() != `invalid params: session "`+string(id)+`" is already running a prompt` {
		t.Errorf("second Begin: %v", err)
	}
	end()
	_, end, err = r.Begin(id, "a prompt")
	if err != nil {
		t.Fatalf("Begin after end: %v", err)
	}
	end()
}
