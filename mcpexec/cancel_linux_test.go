package mcpexec_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/jsonrpc2"
	"github.com/acpterm/acpterm/internal/proc/proctest"
	"github.com/acpterm/acpterm/mcpexec"
	"github.com/acpterm/acpterm/terminal"
)

// A cancelled exec_command kills its command: the model never got a
// session ID for it. Progress notifications come while it runs.
func TestCancelledExecKillsTheCommand(t *testing.T) {
	dir := t.TempDir()
	c := startServer(t, &mcpexec.Options{Cwd: dir, Terminal: &terminal.Options{KillGrace: 200 * time.Millisecond}})
	res := make(chan error, 1)
	go func() {
		var r toolResult
		// The first call of a connection has ID 1.
		res <- c.call(ctxFor(t), "tools/call", map[string]any{
			"name":      "exec_command",
			"arguments": map[string]any{"cmd": "echo $$ > pid; echo started; exec sleep 1000", "yield_time_ms": 30000},
			"_meta":     map[string]any{"progressToken": "tok"},
		}, &r)
	}()
	// The first output brings a progress notification.
	var prog struct {
		ProgressToken string  `json:"progressToken"`
		Progress      float64 `json:"progress"`
	}
	for prog.ProgressToken == "" {
		select {
		case <-c.noted:
		case err := <-res:
			t.Fatalf("the call ended before any progress: %v", err)
		}
		c.mu.Lock()
		for _, n := range c.notes {
			if n.Method == "notifications/progress" {
				_ = json.Unmarshal(n.Params, &prog)
			}
		}
		c.mu.Unlock()
	}
	if prog.ProgressToken != "tok" || prog.Progress <= 0 {
		t.Errorf("progress %+v", prog)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.conn.Notify(ctxFor(t), "notifications/cancelled", map[string]any{"requestId": 1, "reason": "test"}); err != nil {
		t.Fatal(err)
	}
	if err := proctest.WaitExit([]int{pid}, 10*time.Second); err != nil {
		t.Errorf("the cancelled call's command: %v", err)
	}
	// The server answers the cancelled call all the same (the engine
	// replies to every call): -32800.
	if err := <-res; !errors.As(err, new(*jsonrpc2.Error)) || err.(*jsonrpc2.Error).Code != jsonrpc2.CodeRequestCancelled {
		t.Errorf("the cancelled call: %v, want -32800", err)
	}
	if l := c.tool("list_sessions", nil); l.text() != "No sessions are running." {
		t.Errorf("list after the cancel: %q", l.text())
	}
}
