package shellagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/acp"
)

// failingTerminals is a client that advertises terminals and answers every
// terminal/create with an error whose message is msg.
type failingTerminals struct {
	recorder
	msg string
}

func (c *failingTerminals) CreateTerminal(context.Context, *acp.CreateTerminalRequest) (*acp.CreateTerminalResponse, error) {
	return nil, errors.New(c.msg)
}

func (c *failingTerminals) TerminalOutput(context.Context, *acp.TerminalOutputRequest) (*acp.TerminalOutputResponse, error) {
	return nil, acp.ErrResourceNotFound
}

func (c *failingTerminals) WaitForTerminalExit(context.Context, *acp.WaitForTerminalExitRequest) (*acp.WaitForTerminalExitResponse, error) {
	return nil, acp.ErrResourceNotFound
}

func (c *failingTerminals) KillTerminal(context.Context, *acp.KillTerminalRequest) (*acp.KillTerminalResponse, error) {
	return nil, acp.ErrResourceNotFound
}

func (c *failingTerminals) ReleaseTerminal(context.Context, *acp.ReleaseTerminalRequest) (*acp.ReleaseTerminalResponse, error) {
	return nil, acp.ErrResourceNotFound
}

// TestHugeErrorsAreNotHeldPerLine: with KeepGoing, a client that answers
// each terminal/create with a long error must not make the agent keep every
// one of them until the turn ends, and send them all back at once in the
// summary: the agent's memory would grow by a whole message per prompt
// line. The summary's size stands for what the agent held.
func TestHugeErrorsAreNotHeldPerLine(t *testing.T) {
	const lines, errSize = 16, 256 << 10
	client := &failingTerminals{msg: strings.Repeat("e", errSize)}
	cc, sid := connect(t, client, &Options{KeepGoing: true})
	prompt(t, cc, sid, strings.Repeat("true\n", lines))
	msg, _, _ := client.transcript()
	if !strings.HasSuffix(msg, "16 of 16 commands ran, 16 failed.") {
		t.Errorf("summary ends %q", msg[max(len(msg)-100, 0):])
	}
	if len(msg) > lines*(maxErrorText+100) {
		t.Errorf("summary of %d bytes for %d failed lines: the client's errors are held and echoed whole", len(msg), lines)
	}
}

// TestHugePromptOfEmptyLines: a prompt's text is split into command lines
// without an allocation per line that runs no command. A prompt of one
// long run of newlines used to cost 16 bytes of string header per byte of
// it (strings.Split), 1 GiB for one 64 MiB message. The client is written
// by hand, so that what is measured is the agent's work.
func TestHugePromptOfEmptyLines(t *testing.T) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- Serve(context.Background(), toAgentR, toClientW, &Options{Exec: ExecLocal}) }()
	defer func() {
		toAgentW.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	out := bufio.NewReader(toClientR)
	// call writes a request and returns the result of its response.
	call := func(id int, line []byte) json.RawMessage {
		t.Helper()
		if _, err := toAgentW.Write(line); err != nil {
			t.Fatal(err)
		}
		for {
			l, err := out.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(l, &m); err != nil {
				t.Fatal(err)
			}
			if m.ID != nil && *m.ID == id {
				if m.Error != nil {
					t.Fatalf("call %d: %s", id, m.Error)
				}
				return m.Result
			}
		}
	}
	call(1, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n"))
	cwd, _ := json.Marshal(t.TempDir())
	var sess struct{ SessionID string }
	json.Unmarshal(call(2, []byte(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":`+string(cwd)+`,"mcpServers":[]}}`+"\n")), &sess)

	const size = 1 << 20 // newlines, two bytes each on the wire
	line := []byte(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sess.SessionID + `","prompt":[{"type":"text","text":"`)
	line = append(line, bytes.Repeat([]byte(`\n`), size)...)
	line = append(line, "\"}]}}\n"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := call(3, line)
	runtime.ReadMemStats(&after)
	// Reading the line and decoding the text cost about four times its
	// size; strings.Split alone cost 16 MiB more.
	if got := after.TotalAlloc - before.TotalAlloc; got > 6*uint64(len(line)) {
		t.Errorf("a prompt of %d newlines (%d bytes) allocated %d MiB in the agent", size, len(line), got>>20)
	}
	if !bytes.Contains(res, []byte("end_turn")) {
		t.Errorf("result %s", res)
	}
}
