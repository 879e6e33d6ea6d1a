//go:build unix

package display_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/display"
	"github.com/acpterm/acpterm/terminal"
)

// TestRunLocalCommandKilled: a local command that outlives opts.Timeout,
// or whose ctx is cancelled, is killed; the result says which, the tool
// call ends failed with the signal in its rawOutput and in
// _meta.terminal_exit, and the terminal is released.
func TestRunLocalCommandKilled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
		wantErr error
		status  string
		raw     string
	}{
		{"timeout", 200 * time.Millisecond, false, nil, "timed out, killed by SIGTERM",
			`{"exitCode":null,"signal":"SIGTERM","timedOut":true,"truncated":false}`},
		{"cancel", 0, true, context.Canceled, "cancelled, killed by SIGTERM",
			`{"cancelled":true,"exitCode":null,"signal":"SIGTERM","truncated":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := &announcingClient{announced: make(chan struct{}, 1)}
			client.barrier = make(chan struct{}, 1)
			meta := capsMeta(display.MetaTerminalOutput)
			ac, terms, _ := localSetupWith(t, client, meta)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				go func() {
					<-client.announced
					cancel()
				}()
			}
			cwd := t.TempDir()
			res, err := display.RunLocalCommand(ctx, ac, terms,
				&acp.CreateTerminalRequest{SessionID: "s", Command: "sleep", Args: []string{"30"}, Cwd: &cwd},
				&display.LocalCommandOptions{CommandOptions: display.CommandOptions{Timeout: tc.timeout}})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := res.Status(); got != tc.status || res.TimedOut == tc.cancel || res.Cancelled != tc.cancel {
				t.Errorf("Status() = %q (timed out %v, cancelled %v), want %q", got, res.TimedOut, res.Cancelled, tc.status)
			}
			settle(t, ac, &client.wireClient)
			client.mu.Lock()
			raws := client.raw
			client.mu.Unlock()
			last := decodeObj(t, raws[len(raws)-1])["update"].(map[string]any)
			if last["status"] != "failed" || jsonOf(last["rawOutput"]) != tc.raw {
				t.Errorf("last update %s, want failed with rawOutput %s", jsonOf(last), tc.raw)
			}
			if exit := jsonOf(last["_meta"]); exit != `{"terminal_exit":{"exit_code":null,"signal":"SIGTERM","terminal_id":"`+string(res.TerminalID)+`"}}` {
				t.Errorf("last _meta %s", exit)
			}
			if live := terms.(*terminal.Manager).Terminals("s"); len(live) != 0 {
				t.Errorf("terminals left: %v", live)
			}
		})
	}
}
