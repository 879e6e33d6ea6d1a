package client

import (
	"context"
	"io"
	"sync/atomic"
)

// During a turn of an interactive session the turn's reader (turn_input.go)
// takes the lines typed, for /attach and the like, between the questions
// the agent asks. It must never take a key meant for a question: it reads
// only while it holds the prompter's semaphore, the one that questions
// take too, and gives the semaphore up as soon as a question waits for it.

// askGate tells the turn's reader that a question waits for the
// semaphore.
type askGate struct {
	waiting atomic.Int32  // askers between wanting the semaphore and having it
	want    chan struct{} // a token when an asker starts waiting
	asked   chan struct{} // a token when an asker gives the semaphore back
}

func newAskGate() askGate {
	return askGate{want: make(chan struct{}, 1), asked: make(chan struct{}, 1)}
}

// acquire takes the semaphore for a question (or a form, or /attach),
// ahead of the turn's reader; it reports false when ctx ends or cancel is
// closed first.
func (p *prompter) acquire(ctx context.Context, cancel <-chan struct{}) bool {
	p.askers.waiting.Add(1)
	select {
	case p.askers.want <- struct{}{}:
	default:
	}
	defer p.askers.waiting.Add(-1)
	select {
	case p.sem <- struct{}{}:
		return true
	case <-ctx.Done():
	case <-cancel:
	}
	p.askerDone() // a reader that yielded to this asker need not wait longer
	return false
}

// release gives the semaphore back after acquire.
func (p *prompter) release() {
	<-p.sem
	p.askerDone()
}

// askerDone tells a reader that yielded that the asker is through.
func (p *prompter) askerDone() {
	select {
	case p.askers.asked <- struct{}{}:
	default:
	}
}

// keysBetweenQuestions is nextKeys for the turn's reader: it waits for
// keys only while no question is asked or waits to be, and returns
// errStopped when stop is closed, io.EOF at the end of input.
func (p *prompter) keysBetweenQuestions(stop <-chan struct{}) ([]byte, error) {
	p.start()
	for {
		select {
		case p.sem <- struct{}{}:
		case <-stop:
			return nil, errStopped
		}
		if p.askers.waiting.Load() > 0 {
			// An asker counted itself before it tried the semaphore:
			// let it have it, and try again once it is done.
			if err := p.yield(stop); err != nil {
				return nil, err
			}
			continue
		}
		select {
		case keys, ok := <-p.keys:
			<-p.sem
			if !ok {
				return nil, io.EOF
			}
			return keys, nil
		case <-p.askers.want:
			if err := p.yield(stop); err != nil {
				return nil, err
			}
		case <-stop:
			<-p.sem
			return nil, errStopped
		}
	}
}

// yield gives the semaphore, which the caller holds, to an asker and
// waits until one is done with it (a stale token only costs a round).
func (p *prompter) yield(stop <-chan struct{}) error {
	<-p.sem
	select {
	case <-p.askers.asked:
		return nil
	case <-stop:
		return errStopped
	}
}
