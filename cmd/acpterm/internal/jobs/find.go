package jobs

import (
	"context"
	"strconv"
	"strings"
)

// Find returns the item ref names: its Ref ("3", or "#3"), else its ID.
// An item that ended is found among the last few that did.
func (t *Tracker) Find(ref string) (Item, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if it := t.findLocked(ref); it != nil {
		return copyItem(it), true
	}
	if it := t.findEndedLocked(ref); it != nil {
		return copyItem(it), true
	}
	return Item{}, false
}

// findLocked is the running item ref names, or nil.
func (t *Tracker) findLocked(ref string) *Item {
	if n, ok := refNumber(ref); ok {
		for _, it := range t.live {
			if it.Ref == n {
				return it
			}
		}
		return nil
	}
	for kind := ClientTerminal; kind <= ToolCall; kind++ {
		if it := t.live[key{kind, ref}]; it != nil {
			return it
		}
	}
	return nil
}

func (t *Tracker) findEndedLocked(ref string) *Item {
	n, byRef := refNumber(ref)
	for i := len(t.ended) - 1; i >= 0; i-- {
		if e := &t.ended[i]; byRef && e.Ref == n || !byRef && e.ID == ref {
			return e
		}
	}
	return nil
}

// refNumber reads a Ref: digits, with an optional leading "#".
func refNumber(ref string) (int, bool) {
	s := strings.TrimPrefix(ref, "#")
	if s == "" || len(s) > 9 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// Stop stops the item ref names (see Find) with its Cancel, marking it
// Stopping meanwhile; if Cancel fails, the item is running again. It
// returns the item as it is afterwards, and ErrUnknown, ErrEnded,
// ErrStopping or ErrCannotStop (the item then says why, NoCancel) when
// there is nothing to stop, or Cancel's error.
func (t *Tracker) Stop(ctx context.Context, ref string) (Item, error) {
	if ref == "" {
		return Item{}, ErrUnknown
	}
	t.mu.Lock()
	it := t.findLocked(ref)
	if it == nil {
		defer t.mu.Unlock()
		if e := t.findEndedLocked(ref); e != nil {
			return copyItem(e), ErrEnded
		}
		return Item{}, ErrUnknown
	}
	switch {
	case it.State == Stopping:
		t.mu.Unlock()
		return copyItem(it), ErrStopping
	case it.Cancel == nil:
		t.mu.Unlock()
		return copyItem(it), ErrCannotStop
	}
	it.State = Stopping
	cancel, k, n := it.Cancel, key{it.Kind, it.ID}, it.Ref
	t.mu.Unlock()

	err := cancel(ctx)

	t.mu.Lock()
	defer t.mu.Unlock()
	if cur := t.live[k]; cur != nil && cur.Ref == n {
		if err != nil && cur.State == Stopping {
			cur.State = Running
		}
		return copyItem(cur), err
	}
	if e := t.findEndedLocked(strconv.Itoa(n)); e != nil {
		return copyItem(e), err
	}
	return Item{Ref: n, Kind: k.kind, ID: k.id, State: Ended}, err
}
