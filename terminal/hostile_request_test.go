//go:build linux

package terminal

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// An argument list (or env) larger than any exec accepts is refused as
// invalid up front: not copied several times over on the way to a fork
// that fails with E2BIG, and not shown to Policy.Decide (the user) first.
func TestCreateHugeArgList(t *testing.T) {
	var asked atomic.Int32
	m := newTestManager(t, &Options{Policy: &Policy{Decide: func(context.Context, Info) Decision {
		asked.Add(1)
		return Allow()
	}}})
	args := make([]string, 1<<20) // 16 MiB of string headers, about 4 MiB of JSON
	for i := range args {
		args[i] = "x"
	}
	manyEnv := make([]EnvVar, 1<<20)
	for i := range manyEnv {
		manyEnv[i] = EnvVar{Name: "X" + strconv.Itoa(i), Value: "y"}
	}
	for name, req := range map[string]Request{
		"args": {SessionID: "s", Command: "true", Args: args},
		"env":  {SessionID: "s", Command: "true", Args: []string{"x"}, Env: manyEnv},
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := m.Create(testCtx(t), req)
			runtime.ReadMemStats(&after)
			wantCode(t, err, ErrInvalid, CodeInvalidParams)
			if n := asked.Load(); n != 0 {
				t.Errorf("Policy.Decide was asked %d times about a command that cannot start", n)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("refusing it allocated %d MiB", alloc>>20)
			}
		})
	}
}

// What a released terminal's snapshot holds of its request (args, env)
// counts against RetainBytes: an agent that creates and releases
// terminals with large argument lists and no output cannot make the
// manager keep them without bound.
func TestRetainCountsArgsAndEnv(t *testing.T) {
	const retain = 1 << 20
	m := newTestManager(t, &Options{RetainBytes: retain})
	big := strings.Repeat("a", 100<<10)
	var infos []Info
	for range 5 {
		info := mustCreate(t, m, Request{
			Command: "true",
			Args:    []string{big, big, big, big},
			Env:     []EnvVar{{Name: "BIG", Value: big}},
		})
		mustWait(t, m, info)
		mustRelease(t, m, info)
		infos = append(infos, info)
	}
	if _, err := m.Snapshot(infos[0].SessionID, infos[0].TerminalID); err == nil {
		t.Errorf("5 released terminals of 500 KiB of args and env each are all retained with RetainBytes %d", retain)
	}
	if _, err := m.Snapshot(infos[4].SessionID, infos[4].TerminalID); err != nil {
		t.Errorf("the newest released terminal is not retained: %v", err)
	}
}
