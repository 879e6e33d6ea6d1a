//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/acpterm/acpterm/acp"
)

// The fs hostile cases: an agent that tries to reach outside the workspace
// by swapping a directory for a symlink mid-request, and one that points
// fs/* at FIFOs, devices and sockets to hang the client. Both report what
// they saw in one agent message ("fs-report {json}") for the test to check.

const (
	fsRaceCalls      = 1000 // reads, and as many writes (the replaced code let a few percent through)
	fsRaceShortCalls = 200  // under -short: see TestHostileFSSymlinkRace
	fsRaceInFlight   = 16
	fsOutsideContent = "OUTSIDE\n"
	fsReportPrefix   = "fs-report "
	// fsRaceCallsEnv tells the fs-race agent how many calls to make.
	fsRaceCallsEnv = "ACPTERM_E2E_FS_RACE_CALLS"
	// fsNamesEnv lists the special files the fs-special agent tries.
	fsNamesEnv = "ACPTERM_E2E_FS_NAMES"
)

func init() {
	registerHostile("fs-race", func() int { return serveAgent(&fsRaceAgent{}) })
	registerHostile("fs-special", func() int { return serveAgent(&fsSpecialAgent{}) })
}

// fsAgent remembers the session's cwd, the workspace it attacks.
type fsAgent struct {
	baseAgent
	cwd atomic.Pointer[string]
}

func (a *fsAgent) NewSession(ctx context.Context, req *acp.NewSessionRequest) (*acp.NewSessionResponse, error) {
	a.cwd.Store(&req.Cwd)
	return a.baseAgent.NewSession(ctx, req)
}

func (a *fsAgent) report(ctx context.Context, sid acp.SessionID, v any) (*acp.PromptResponse, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	err = a.conn.Load().SessionUpdate(ctx, &acp.SessionNotification{SessionID: sid, Update: &acp.AgentMessageChunk{
		Content: &acp.TextContent{Text: fsReportPrefix + string(b)},
	}})
	if err != nil {
		return nil, err
	}
	return &acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// fsRaceReport is what the fs-race agent saw.
type fsRaceReport struct {
	Reads, Writes, ReadsServed, WritesServed, Refused, Leaked, Swaps int64
	SwapError                                                        string
	Unexpected                                                       []string // errors other than invalid params / not found
}

// fsRaceAgent keeps exchanging ws/race (a directory) and ws/race.alt (a
// symlink to a directory outside the roots) while it reads and writes
// ws/race/file, fsRaceInFlight requests at a time.
type fsRaceAgent struct{ fsAgent }

func (a *fsRaceAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn, ws := a.conn.Load(), *a.cwd.Load()
	race, alt := filepath.Join(ws, "race"), filepath.Join(ws, "race.alt")
	path := filepath.Join(race, "file")

	n, err := strconv.Atoi(os.Getenv(fsRaceCallsEnv))
	if err != nil || n <= 0 {
		n = fsRaceCalls
	}
	var rep fsRaceReport
	var mu sync.Mutex // guards rep.Unexpected, rep.SwapError
	var readsServed, writesServed, refused, leaked, swaps atomic.Int64
	stop := make(chan struct{})
	var swapper sync.WaitGroup
	swapper.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// An atomic exchange: ws/race always exists, as the
			// directory or as the link leading out.
			if err := unix.Renameat2(unix.AT_FDCWD, race, unix.AT_FDCWD, alt, unix.RENAME_EXCHANGE); err != nil {
				mu.Lock()
				rep.SwapError = err.Error()
				mu.Unlock()
				return
			}
			swaps.Add(1)
		}
	})

	calls := make(chan int)
	var clients sync.WaitGroup
	for range fsRaceInFlight {
		clients.Go(func() {
			for i := range calls {
				var err error
				if i%2 == 0 {
					var resp *acp.ReadTextFileResponse
					resp, err = conn.ReadTextFile(ctx, &acp.ReadTextFileRequest{SessionID: req.SessionID, Path: path})
					switch {
					case err == nil && resp.Content == fsOutsideContent:
						leaked.Add(1)
					case err == nil:
						readsServed.Add(1)
					}
				} else {
					_, err = conn.WriteTextFile(ctx, &acp.WriteTextFileRequest{SessionID: req.SessionID, Path: path, Content: "written by the agent\n"})
					if err == nil {
						writesServed.Add(1)
					}
				}
				if err == nil {
					continue
				}
				refused.Add(1)
				if c := acp.ErrorCode(err); c != acp.CodeInvalidParams && c != acp.CodeResourceNotFound {
					mu.Lock()
					if len(rep.Unexpected) < 5 {
						rep.Unexpected = append(rep.Unexpected, err.Error())
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range 2 * n {
		calls <- i
	}
	close(calls)
	clients.Wait()
	close(stop)
	swapper.Wait()

	rep.Reads, rep.Writes = int64(n), int64(n)
	rep.ReadsServed, rep.WritesServed, rep.Refused = readsServed.Load(), writesServed.Load(), refused.Load()
	rep.Leaked, rep.Swaps = leaked.Load(), swaps.Load()
	return a.report(ctx, req.SessionID, &rep)
}

// fsCall is one fs request the fs-special agent made and how it ended.
type fsCall struct {
	Name, Op string
	Code     int64 // 0: it succeeded
	Message  string
	Millis   int64
}

// fsSpecialAgent reads and writes each file named in fsNamesEnv, all at
// once, each bounded by 10s on its side so that a hung request shows up in
// the report rather than as a silent agent.
type fsSpecialAgent struct{ fsAgent }

func (a *fsSpecialAgent) Prompt(ctx context.Context, req *acp.PromptRequest) (*acp.PromptResponse, error) {
	conn, ws := a.conn.Load(), *a.cwd.Load()
	var mu sync.Mutex
	var calls []fsCall
	var wg sync.WaitGroup
	for _, name := range strings.Split(os.Getenv(fsNamesEnv), ",") {
		for _, op := range []string{"read", "write"} {
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				path := filepath.Join(ws, name)
				start := time.Now()
				var err error
				if op == "read" {
					_, err = conn.ReadTextFile(cctx, &acp.ReadTextFileRequest{SessionID: req.SessionID, Path: path})
				} else {
					_, err = conn.WriteTextFile(cctx, &acp.WriteTextFileRequest{SessionID: req.SessionID, Path: path, Content: "data\n"})
				}
				c := fsCall{Name: name, Op: op, Millis: time.Since(start).Milliseconds()}
				if err != nil {
					c.Code, c.Message = acp.ErrorCode(err), err.Error()
				}
				mu.Lock()
				calls = append(calls, c)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return a.report(ctx, req.SessionID, calls)
}

// fsReport decodes the agent's report from the JSON events into v.
func fsReport(t *testing.T, stdout string, v any) {
	t.Helper()
	var text strings.Builder
	for _, ev := range ofKind(parseEvents(t, stdout), "session_update") {
		u := ev.update()
		if u["sessionUpdate"] != "agent_message_chunk" {
			continue
		}
		if c, _ := u["content"].(map[string]any); c != nil {
			s, _ := c["text"].(string)
			text.WriteString(s)
		}
	}
	body, ok := strings.CutPrefix(text.String(), fsReportPrefix)
	if !ok {
		t.Fatalf("no fs report in the agent's messages: %q", text.String())
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("fs report %q: %v", body, err)
	}
}

// TestHostileFSSymlinkRace: an agent swaps a workspace directory for a
// symlink leading outside, over and over, while it reads and writes a file
// through it. No read returns the outside file and no write lands outside:
// the client opens through os.Root, so the check and the open are one
// step. (The check-then-open-by-name code this replaced let a few percent
// of the calls through.)
func TestHostileFSSymlinkRace(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(ws, "race"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{filepath.Join(ws, "race", "file"): "inside\n", filepath.Join(outside, "file"): fsOutsideContent} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(ws, "race.alt")); err != nil {
		t.Fatal(err)
	}
	calls := fsRaceCalls
	if testing.Short() {
		// A few percent of 200 is still several leaks for code that lets
		// them through, at a fifth of the cost (the full count takes 1.6 s
		// of CPU).
		calls = fsRaceShortCalls
	}
	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=fs-race", fsRaceCallsEnv + "=" + strconv.Itoa(calls)}, dir: ws},
		"run", "--format", "json", "--approve-all", "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var rep fsRaceReport
	fsReport(t, r.stdout, &rep)
	t.Logf("%+v in %v", rep, r.elapsed)
	if rep.SwapError != "" {
		t.Fatalf("the swapper failed: %s", rep.SwapError)
	}
	if rep.Leaked != 0 || len(rep.Unexpected) != 0 {
		t.Errorf("%d reads returned the outside file (want 0); unexpected errors: %q", rep.Leaked, rep.Unexpected)
	}
	if served := rep.ReadsServed + rep.WritesServed; served+rep.Refused+rep.Leaked != 2*int64(calls) {
		t.Errorf("%d served + %d refused + %d leaked, want %d calls", served, rep.Refused, rep.Leaked, 2*calls)
	}
	// Both outcomes must occur, or the race was not exercised.
	if rep.ReadsServed+rep.WritesServed == 0 || rep.Refused == 0 || rep.Swaps == 0 {
		t.Errorf("the race was not exercised: %+v", rep)
	}
	b, err := os.ReadFile(filepath.Join(outside, "file"))
	if err != nil || string(b) != fsOutsideContent {
		t.Errorf("the file outside (-want +got):\n-%q\n+%q (%v)", fsOutsideContent, b, err)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"file"}; !slices.Equal(names, want) {
		t.Errorf("the directory outside holds (-want +got):\n-%q\n+%q", want, names)
	}
}

// TestHostileFSSpecialFiles: fs/* on a FIFO, a character device and a
// socket in the workspace is refused at once (a FIFO would otherwise hang
// the open, and shutdown behind it); the run ends in bounded time.
func TestHostileFSSpecialFiles(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	var names []string
	if err := unix.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	names = append(names, "fifo")
	// 1,3 is /dev/null: harmless even if something were written to it.
	if err := unix.Mknod(filepath.Join(ws, "chardev"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Logf("skipping the character device: mknod: %v", err)
	} else {
		names = append(names, "chardev")
	}
	// A bound socket's file stays after the socket is closed.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Bind(fd, &unix.SockaddrUnix{Name: filepath.Join(ws, "sock")})
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, "sock")

	r := acpterm(t, opts{env: []string{fakeAgentEnv + "=fs-special", fsNamesEnv + "=" + strings.Join(names, ",")}, dir: ws},
		"run", "--format", "json", "--approve-all", "-p", "go", "--", testExe(t))
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	var calls []fsCall
	fsReport(t, r.stdout, &calls)
	if len(calls) != 2*len(names) {
		t.Fatalf("%d calls reported, want %d: %+v", len(calls), 2*len(names), calls)
	}
	for _, c := range calls {
		const want = "not a regular file"
		if c.Code != acp.CodeInvalidParams || !strings.Contains(c.Message, want) || c.Millis > 5000 {
			t.Errorf("%s %s (-want +got):\n-code %d containing %q within 5s\n+code %d %q after %dms",
				c.Op, c.Name, acp.CodeInvalidParams, want, c.Code, c.Message, c.Millis)
		}
	}
	if r.elapsed > 20*time.Second {
		t.Errorf("the run took %v", r.elapsed)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "fifo")); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO was replaced: %v, %v", fi, err)
	}
}
