//go:build linux

package terminal

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/acpterm/acpterm/sandbox"
)

// The sandbox spawners of a manager: one helper per session and
// Writable set, started on first use and stopped with the session.

// spawnerSlot is one sandbox helper, started by the first command that
// needs it; ready is closed once sp or err is set. abandon stops a start
// still under way, for a manager or session that is closing.
type spawnerSlot struct {
	ready   chan struct{}
	sp      *sandbox.Spawner
	err     error
	abandon context.CancelFunc
}

// newSlot returns a slot and the context its start runs under.
func newSlot() (*spawnerSlot, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	return &spawnerSlot{ready: make(chan struct{}), abandon: cancel}, ctx
}

// start starts the slot's helper under ctx, as pol says.
func (slot *spawnerSlot) start(ctx context.Context, pol *sandbox.Policy) {
	sp := *pol
	sp.TempDir = "" // the spawner makes the root of its commands' TMPDIRs
	slot.sp, slot.err = sp.NewSpawnerContext(ctx)
	close(slot.ready)
}

// maxSpawners bounds the sandbox helpers of a manager: a session whose
// commands ask for many different Writable sets (a cwd each, without
// roots) gets one helper per set, and past the bound commands are wrapped
// one by one instead.
const maxSpawners = 32

// errNoSpawner: no spawner could be had for the command, which is then
// wrapped instead.
var errNoSpawner = errors.New("no sandbox spawner")

// spawn starts the command through the spawner of its session and policy.
// A helper that died or stopped answering is replaced once; failing that,
// or when the spawner cannot start, it returns errNoSpawner. A policy the
// kernel cannot enforce is a *sandboxError, as from Wrap.
func (iso *isolator) spawn(p *proc, s *spawnSpec, cg string) error {
	key := spawnerKey(s)
	for attempt := 0; attempt < 2; attempt++ {
		slot, err := iso.spawner(key, s.sandbox)
		switch {
		case err == nil:
		case errors.Is(err, errNoSpawner):
			return err
		case errors.Is(err, sandbox.ErrSpawnerDead):
			iso.logf("terminal: sandbox spawner unavailable, wrapping the command instead: %v", err)
			return errNoSpawner
		default:
			// The policy cannot be enforced (or is wrong), as Wrap would say.
			return &sandboxError{err}
		}
		var cgf *os.File
		if cg != "" {
			if cgf, err = os.Open(cg); err != nil {
				return err
			}
		}
		child, err := slot.sp.Start(&sandbox.Cmd{
			Path: s.path, Args: s.argv, Env: s.env, Dir: s.dir,
			Stdin: s.stdin, Stdout: s.stdout, Stderr: s.stdout,
			// As newCmd: a process group of its own (on a pty, a session
			// with the pty as its terminal); Pdeathsig ties it to the
			// helper, which is tied to this host.
			Setpgid: !s.pty, Setsid: s.pty, Setctty: s.pty, Pdeathsig: syscall.SIGKILL,
			Cgroup:      cgf,
			ProxyClient: s.sandbox.ProxyClient,
		})
		if cgf != nil {
			cgf.Close()
		}
		if err == nil {
			p.child = child
			s.applied = child.Applied()
			return nil
		}
		if !errors.Is(err, sandbox.ErrSpawnerDead) {
			return err // the command's own failure (exec, cgroup)
		}
		iso.logf("terminal: sandbox spawner for session %q failed, restarting it: %v", s.session, err)
		iso.dropSpawner(key, slot)
	}
	return errNoSpawner
}

// spawnerKey names the spawner a command can use: one per session (its
// commands share a helper, and nothing with other sessions') and per
// Writable set, which the helper's Landlock rules fix.
func spawnerKey(s *spawnSpec) string {
	return s.session + "\x00" + writableKey(s.sandbox.Writable)
}

func writableKey(writable []string) string { return strings.Join(writable, "\x00") }

// startSpare starts, in the background, the helper that the first session
// to run a command will use, when the policy already says what commands
// may write (Writable set, or from Roots).
//
// Why: starting a helper means starting the host binary again, about as
// long as the rest of a short command's create; started with the manager,
// it overlaps with whatever comes before the first create (for a client,
// starting the agent and its first turn) instead of delaying it.
func (iso *isolator) startSpare(pol *sandbox.Policy) {
	if pol == nil || pol.Mode == sandbox.Off && pol.Network == sandbox.AllowNetwork ||
		pol.Mode == sandbox.WorkspaceWrite && len(pol.Writable) == 0 { // per cwd: not known yet
		return
	}
	slot, ctx := newSlot()
	iso.spare, iso.spareKey = slot, writableKey(pol.Writable)
	// Owned by the isolator: close abandons the start or stops the helper.
	go slot.start(ctx, pol)
}

// spawner returns the spawner for key, starting it on first use. Starts
// for one key wait for the first; other keys do not.
func (iso *isolator) spawner(key string, pol *sandbox.Policy) (*spawnerSlot, error) {
	iso.spawnMu.Lock()
	if iso.closed || iso.noSpawner {
		iso.spawnMu.Unlock()
		return nil, errNoSpawner
	}
	slot := iso.spawners[key]
	if slot == nil && iso.spare != nil && writableKey(pol.Writable) == iso.spareKey {
		// The first session with the manager's policy takes the helper
		// started with the manager, ready or still starting.
		slot = iso.spare
		iso.spare = nil
		iso.spawners[key] = slot
		iso.spawnMu.Unlock()
		<-slot.ready
		if slot.err != nil {
			iso.dropSpawner(key, slot)
		}
	} else if slot == nil {
		if len(iso.spawners) >= maxSpawners {
			iso.spawnMu.Unlock()
			return nil, errNoSpawner
		}
		var ctx context.Context
		slot, ctx = newSlot()
		iso.spawners[key] = slot
		iso.spawnMu.Unlock()
		slot.start(ctx, pol)
		if slot.err != nil {
			iso.dropSpawner(key, slot)
		}
	} else {
		iso.spawnMu.Unlock()
		<-slot.ready
	}
	if slot.err != nil {
		return nil, slot.err
	}
	return slot, nil
}

// dropSpawner forgets slot, if it is still the one for key, and stops it.
func (iso *isolator) dropSpawner(key string, slot *spawnerSlot) {
	iso.spawnMu.Lock()
	if iso.spawners[key] == slot {
		delete(iso.spawners, key)
	}
	iso.spawnMu.Unlock()
	slot.abandon()
	if slot.sp != nil {
		_ = slot.sp.Close()
	}
}

// releaseSession stops the session's spawners; its terminals have been
// released.
func (iso *isolator) releaseSession(id string) {
	prefix := id + "\x00"
	iso.spawnMu.Lock()
	var slots []*spawnerSlot
	for key, slot := range iso.spawners {
		if strings.HasPrefix(key, prefix) {
			slots = append(slots, slot)
			delete(iso.spawners, key)
		}
	}
	iso.spawnMu.Unlock()
	closeSpawners(slots)
}

// closeSpawners stops spawners concurrently: each may take a moment to
// reap and exit. Those still starting are abandoned: a manager that ran
// no command does not wait for a helper it never used.
func closeSpawners(slots []*spawnerSlot) {
	var wg sync.WaitGroup
	for _, slot := range slots {
		slot.abandon()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-slot.ready
			if slot.sp != nil {
				_ = slot.sp.Close()
			}
		}()
	}
	wg.Wait()
}
