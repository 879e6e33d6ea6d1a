package client

import (
	"bytes"
	"context"
	"os"
	"time"

	"github.com/acpterm/acpterm/terminal"
)

// pumpEvents feeds terminal events to the renderer until the manager is
// closed and the last queued event is delivered.
func (d *driver) pumpEvents(sub *terminal.Subscription) {
	defer d.wg.Done()
	defer sub.Close()
	for {
		ev, err := sub.Next(context.Background())
		if err != nil {
			return
		}
		d.r.TerminalEvent(ev)
	}
}

// pumpStderr copies the agent's stderr to ours, line by line, so that its
// log lines do not cut through the live region.
func (d *driver) pumpStderr(f *os.File) {
	defer d.wg.Done()
	defer f.Close()
	buf := make([]byte, 32<<10)
	var line []byte
	for {
		n, err := f.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				line = append(line, chunk...)
				if len(line) >= 64<<10 {
					d.agentStderr(line)
					line = line[:0]
				}
				break
			}
			line = append(line, chunk[:i]...)
			d.agentStderr(line)
			line = line[:0]
			chunk = chunk[i+1:]
		}
		if err != nil {
			if len(line) > 0 {
				d.agentStderr(line)
			}
			return
		}
	}
}

// tick drives the renderer's clock-based display.
func (d *driver) tick() {
	defer d.wg.Done()
	every := 500 * time.Millisecond
	if d.cfg.Text.Live {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.r.Tick()
		}
	}
}
