package client

import (
	"bytes"
	"context"
	"strings"
)

// While a turn of an interactive session runs, the terminal is in its
// normal mode (Ctrl-C interrupts, the terminal echoes and edits lines),
// and acpterm reads the lines typed between the agent's questions: the
// commands that make sense while the agent works run at once (/attach to
// a password prompt the turn waits on, /send, /jobs, /cancel); any other
// line is kept, as typed, for the prompt line after the turn.

// turnCommands are the in-session commands taken during a turn.
var turnCommands = map[string]bool{"attach": true, "send": true, "jobs": true, "cancel": true}

// maxTypeAhead bounds what is kept for the next prompt line, in bytes.
const maxTypeAhead = 64 << 10

// startTurnInput starts reading the lines typed during a turn, when the
// session runs on a terminal; the function it returns stops it and waits
// for it, which, during an /attach, is when the user detaches.
func (d *driver) startTurnInput(ctx context.Context) (stop func()) {
	if d.ask == nil || !d.ask.Terminal() {
		return func() {}
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.turnInput(ctx, quit)
	}()
	return func() {
		close(quit)
		<-done
	}
}

// turnInput reads lines until stop is closed or input ends.
func (d *driver) turnInput(ctx context.Context, stop <-chan struct{}) {
	var buf []byte
	defer func() { d.keepTypeAhead(buf) }() // a line begun, not ended
	for {
		keys, err := d.ask.KeysBetweenQuestions(stop)
		if err != nil {
			return
		}
		buf = append(buf, keys...)
		for {
			i := bytes.IndexAny(buf, "\r\n")
			if i < 0 {
				break
			}
			line := buf[:i+1]
			if !d.turnLine(ctx, string(line)) {
				d.keepTypeAhead(line)
			}
			buf = buf[i+1:]
		}
		if len(buf) > maxTypeAhead {
			d.keepTypeAhead(buf)
			buf = nil
		}
	}
}

// turnLine runs line if it is a command taken during a turn, and reports
// whether it was.
func (d *driver) turnLine(ctx context.Context, line string) bool {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "/") {
		return false
	}
	name, arg, _ := strings.Cut(line[1:], " ")
	if !turnCommands[name] {
		return false
	}
	arg = strings.TrimSpace(arg)
	resume := d.sw.Suspend() // what the commands say goes above the live region
	defer resume()
	switch name {
	case "attach":
		d.attachCommand(ctx, arg)
	case "send":
		d.sendCommand(ctx, arg)
	case "jobs":
		d.listJobs()
	case "cancel":
		d.cancelJob(ctx, arg)
	}
	return true
}

// keepTypeAhead keeps b, typed during a turn, for the next prompt line.
func (d *driver) keepTypeAhead(b []byte) {
	if len(b) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.typeAhead)+len(b) <= maxTypeAhead {
		d.typeAhead = append(d.typeAhead, b...)
	}
}

// takeTypeAhead returns, and forgets, what was kept for the prompt line.
func (d *driver) takeTypeAhead() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.typeAhead
	d.typeAhead = nil
	return b
}
