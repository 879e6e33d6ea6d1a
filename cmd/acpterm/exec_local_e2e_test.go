package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
)

// TestExecLocal: acpterm run with the built-in agent running commands
// itself. acpterm's client asks for the v2 form, and renders those
// terminals like its own: live output, exit status.
func TestExecLocal(t *testing.T) {
	t.Parallel()
	prompt := "printf 'one\\n'; printf 'two\\n' >&2\nexit 3"
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{}, "run", "--format", "json", "-p", prompt, "--", acptermBin, "agent", "--exec", "local", "--keep-going")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		evs := parseEvents(t, r.stdout)
		created := ofKind(evs, "terminal_created")
		if len(created) != 2 || created[0]["display"] != true || !strings.Contains(created[0].str("command"), "one") ||
			created[0].str("cwd") == "" || created[0]["pid"] != nil {
			t.Fatalf("terminal_created events %v", created)
		}
		tid := created[0].str("terminalId")
		var out strings.Builder
		for _, e := range ofKind(evs, "terminal_output") {
			if e.str("terminalId") == tid {
				out.WriteString(e.str("data"))
			}
		}
		if out.String() != "one\ntwo\n" {
			t.Fatalf("terminal_output of %s: %q", tid, out.String())
		}
		exits := ofKind(evs, "terminal_exit")
		if len(exits) != 2 || exits[0]["exitCode"] != 0.0 || exits[1]["exitCode"] != 3.0 {
			t.Fatalf("terminal_exit events %v", exits)
		}
		var texts []string
		for _, e := range ofKind(evs, "session_update") {
			if u := e.update(); u["sessionUpdate"] == "tool_call_update" {
				content, _ := u["content"].([]any)
				if len(content) == 2 {
					text, _ := content[1].(map[string]any)["content"].(map[string]any)
					texts = append(texts, fmt.Sprint(text["text"]))
				}
			}
		}
		if want := []string{"```\none\ntwo\n```\nexit 0", "(no output)\nexit 3"}; fmt.Sprint(texts) != fmt.Sprint(want) {
			t.Fatalf("tool call texts %q, want %q", texts, want)
		}
	})
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		r := acpterm(t, opts{}, "run", "-p", "printf 'one\\n'; printf 'two\\n'", "--", acptermBin, "agent", "--exec", "local")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		mustContain(t, "stdout", r.stdout, "  │ one\n", "  │ two\n")
	})
}

// countingReader counts the bytes the agent wrote.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// benchClient notes when the first live output arrived.
type benchClient struct {
	mu    sync.Mutex
	start time.Time
	first time.Duration
}

func (c *benchClient) SessionUpdate(ctx context.Context, n *acp.SessionNotification) error {
	raw := string(acp.RawParams(ctx))
	if strings.Contains(raw, `"terminal_output_chunk"`) || strings.Contains(raw, `"terminal_output":{`) {
		c.mu.Lock()
		if c.first == 0 {
			c.first = time.Since(c.start)
		}
		c.mu.Unlock()
	}
	return nil
}

func (c *benchClient) RequestPermission(context.Context, *acp.RequestPermissionRequest) (*acp.RequestPermissionResponse, error) {
	return &acp.RequestPermissionResponse{Outcome: &acp.CancelledPermissionOutcome{}}, nil
}

// vmHWM is the peak resident set of a live process, in bytes.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// BenchmarkExecLocal runs `acpterm agent --exec local` under a Go client
// and reports, per command: the bytes the agent wrote to the client, its
// peak RSS and the time from the prompt to the first live output.
//
//	go test ./cmd/acpterm -run '^$' -bench ExecLocal -benchtime 3x
func BenchmarkExecLocal(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	for _, bc := range []struct{ name, command string }{
		{"seq35000", "seq 35000"},
		{"flood200MiB", "yes | head -c 209715200"},
	} {
		for _, form := range []struct{ name, key string }{{"v2", display.MetaTerminalUpdate}, {"meta", display.MetaTerminalOutput}} {
			b.Run(bc.name+"/"+form.name, func(b *testing.B) {
				var wire, rss int64
				var first time.Duration
				for b.Loop() {
					wire, rss, first = runLocalOnce(b, bc.command, form.key)
				}
				b.ReportMetric(float64(wire), "wire-bytes")
				b.ReportMetric(float64(rss)/(1<<20), "agent-VmHWM-MiB")
				b.ReportMetric(float64(first.Microseconds())/1000, "first-chunk-ms")
			})
		}
	}
}

func runLocalOnce(b *testing.B, command, metaKey string) (wire, rss int64, first time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, acptermBin, "agent", "--exec", "local")
	cmd.Dir = b.TempDir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	counted := &countingReader{r: stdout}
	client := &benchClient{}
	cc := acp.NewClientConn(client, counted, stdin, nil)
	defer func() {
		cc.Close()
		cc.Wait()
		cmd.Wait()
	}()
	if _, err := cc.Initialize(ctx, &acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion1,
		ClientCapabilities: &acp.ClientCapabilities{Meta: acp.Meta{metaKey: json.RawMessage("true")}}}); err != nil {
		b.Fatal(err)
	}
	sess, err := cc.NewSession(ctx, &acp.NewSessionRequest{Cwd: cmd.Dir, MCPServers: []acp.MCPServer{}})
	if err != nil {
		b.Fatal(err)
	}
	client.start = time.Now()
	resp, err := cc.Prompt(ctx, &acp.PromptRequest{SessionID: sess.SessionID, Prompt: []acp.ContentBlock{&acp.TextContent{Text: command}}})
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		b.Fatal(resp, err)
	}
	if rss, err = vmHWM(cmd.Process.Pid); err != nil {
		b.Fatal(err)
	}
	client.mu.Lock()
	first = client.first
	client.mu.Unlock()
	return counted.n.Load(), rss, first
}
