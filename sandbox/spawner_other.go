//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// A Spawner starts commands in a sandbox kept up for them; Linux only.
type Spawner struct{}

// A Child is a command started by a Spawner.
type Child struct {
	Pid int
}

// NewSpawner fails: the sandbox is implemented on Linux only (see Wrap).
func (p *Policy) NewSpawner() (*Spawner, error) {
	return nil, fmt.Errorf("%w: the sandbox is implemented on Linux only, not on %s", ErrUnsupported, runtime.GOOS)
}

// NewSpawnerContext fails as NewSpawner does.
func (p *Policy) NewSpawnerContext(context.Context) (*Spawner, error) { return p.NewSpawner() }

// Applied is nil: no Spawner exists here.
func (s *Spawner) Applied() *Applied { return nil }

// Start fails: no Spawner exists here.
func (s *Spawner) Start(*Cmd) (*Child, error) { return nil, ErrSpawnerDead }

// Close does nothing.
func (s *Spawner) Close() error { return nil }

// Applied is nil: no Child exists here.
func (c *Child) Applied() *Applied { return nil }

// Wait fails: no Child exists here.
func (c *Child) Wait() (ExitStatus, error) { return ExitStatus{}, ErrSpawnerDead }

// Done is nil: no Child exists here.
func (c *Child) Done() <-chan struct{} { return nil }

// Signal does nothing.
func (c *Child) Signal(syscall.Signal, bool) {}

// Release does nothing.
func (c *Child) Release() error { return nil }

// OpenPTY fails: no Spawner exists here.
func (s *Spawner) OpenPTY() (master, tty *os.File, err error) { return nil, nil, ErrSpawnerDead }
