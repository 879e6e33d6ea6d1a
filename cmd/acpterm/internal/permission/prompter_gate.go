package permission

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
)

// During a turn of an interactive session the turn's reader (the
// client's turn_input.go) takes the lines typed, for /attach and the like,
// between the questions the agent asks. It must never take a key meant
// for a question: it reads only while it holds the prompter's semaphore,
// the one that questions take too, and gives the semaphore up as soon as
// a question waits for it.

// ErrStopped is what a reader of keys other than a question gets when it
// no longer waits for them (KeysBetweenQuestions, NextKeys).
var ErrStopped = errors.New("stopped")

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

// Acquire takes the semaphore for a question (or a form, or /attach),
// ahead of the turn's reader; it reports false when ctx ends or cancel is
// closed first.
func (p *Prompter) Acquire(ctx context.Context, cancel <-chan struct{}) bool {
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

// Release gives the semaphore back after Acquire.
func (p *Prompter) Release() {
	<-p.sem
	p.askerDone()
}

// askerDone tells a reader that yielded that the asker is through.
func (p *Prompter) askerDone() {
	select {
	case p.askers.asked <- struct{}{}:
	default:
	}
}

// KeysBetweenQuestions is NextKeys for the turn's reader: it waits for
// keys only while no question is asked or waits to be, and returns
// ErrStopped when stop is closed, io.EOF at the end of input.
func (p *Prompter) KeysBetweenQuestions(stop <-chan struct{}) ([]byte, error) {
	p.start()
	for {
		select {
		case p.sem <- struct{}{}:
		case <-stop:
			return nil, ErrStopped
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
			return nil, ErrStopped
		}
	}
}

// yield gives the semaphore, which the caller holds, to an asker and
// waits until one is done with it (a stale token only costs a round).
func (p *Prompter) yield(stop <-chan struct{}) error {
	<-p.sem
	select {
	case <-p.askers.asked:
		return nil
	case <-stop:
		return ErrStopped
	}
}

// QuestionWaits receives a token when an asker starts waiting for the
// prompter, for a holder that shows it (an attachment's header); the
// token may be the holder's own, from its Acquire.
func (p *Prompter) QuestionWaits() <-chan struct{} { return p.askers.want }

// QuestionWaiting reports whether an asker waits for the prompter.
func (p *Prompter) QuestionWaiting() bool { return p.askers.waiting.Load() > 0 }

// NextKeys waits for the next keys typed, for a reader other than a
// question that holds the prompter (Acquire) or needs no question to wait:
// io.EOF at the end of input, ErrStopped when stop or cancel is closed
// (either may be nil).
func (p *Prompter) NextKeys(stop, cancel <-chan struct{}) ([]byte, error) {
	p.start()
	select {
	case keys, ok := <-p.keys:
		if !ok {
			return nil, io.EOF
		}
		return keys, nil
	case <-stop:
		return nil, ErrStopped
	case <-cancel:
		return nil, ErrStopped
	}
}
