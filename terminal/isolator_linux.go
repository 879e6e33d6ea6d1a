//go:build linux

package terminal

import (
	"sync"
	"sync/atomic"

	"github.com/acpterm/acpterm/internal/proc/cgroup"
)

// The isolator: the manager's cgroup, its fallback to /proc scans, and
// the sweep that kills what released terminals left behind.

// isolator holds the manager's cgroup, batches /proc scans and keeps the
// sandbox spawners.
type isolator struct {
	logf func(string, ...any)
	cur  atomic.Int32 // Isolation in use; drops from cgroup to procscan on failure
	dir  string       // the manager's cgroup directory (IsolationCgroup)

	scanMu   sync.Mutex
	scanning bool
	pending  map[string][]chan struct{} // marker -> sweepers waiting for it

	spawnMu   sync.Mutex
	spawners  map[string]*spawnerSlot // by session and policy (spawnerKey)
	spare     *spawnerSlot            // started with the manager, for the first session that fits
	spareKey  string                  // its Writable set (writableKey)
	closed    bool
	noSpawner bool // tests and benchmarks: wrap every command
}

func newIsolator(c *config) *isolator {
	iso := &isolator{logf: c.logf, pending: map[string][]chan struct{}{}, spawners: map[string]*spawnerSlot{}}
	mode := c.isolation
	if mode == IsolationAuto || mode == IsolationCgroup {
		dir, err := makeManagerCgroup(c.cgroupParent)
		if err == nil {
			iso.dir = dir
			mode = IsolationCgroup
		} else {
			if c.isolation == IsolationCgroup {
				c.logf("terminal: cgroup isolation unavailable, using /proc scan: %v", err)
			}
			mode = IsolationProcScan
		}
	}
	iso.cur.Store(int32(mode))
	iso.startSpare(c.sandbox)
	return iso
}

func (iso *isolator) mode() Isolation { return Isolation(iso.cur.Load()) }

// fallback stops using cgroups for new terminals.
func (iso *isolator) fallback(err error) {
	if iso.cur.CompareAndSwap(int32(IsolationCgroup), int32(IsolationProcScan)) {
		iso.logf("terminal: cgroup isolation failed, using /proc scan from now on: %v", err)
	}
}

// sweep kills what may be left of released terminals: the process group
// (background jobs of a command that has exited), the cgroup, or the
// processes carrying the terminal's marker.
func (iso *isolator) sweep(ps []*proc) {
	var markers []string
	for _, p := range ps {
		p.kill()
		if p.scan {
			markers = append(markers, p.marker)
		}
	}
	if len(markers) > 0 {
		iso.scanKill(markers)
	}
}

func (iso *isolator) close() {
	iso.spawnMu.Lock()
	iso.closed = true
	slots := make([]*spawnerSlot, 0, len(iso.spawners))
	for _, slot := range iso.spawners {
		slots = append(slots, slot)
	}
	clear(iso.spawners)
	if iso.spare != nil {
		slots = append(slots, iso.spare)
		iso.spare = nil
	}
	iso.spawnMu.Unlock()
	closeSpawners(slots)
	if iso.dir != "" {
		if err := cgroup.RemoveTree(iso.dir); err != nil {
			iso.logf("terminal: removing cgroup %s: %v", iso.dir, err)
		}
	}
}

// makeManagerCgroup creates the manager's cgroup under parent (default:
// the current process's cgroup), after removing those of dead hosts.
func makeManagerCgroup(parent string) (string, error) {
	return cgroup.New(parent, "terms")
}

// ownCgroupDir finds the directory of the current process's cgroup.
func ownCgroupDir() (string, error) { return cgroup.Own() }
