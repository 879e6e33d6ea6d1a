// Package streams holds what the JSON-RPC engine and the probe both need
// to know about the reader and writer they are given.
package streams

import "reflect"

// Same reports whether r and w are one object (a socket, a pty), which
// must then be closed once, not once as the reader and once as the writer.
// Values of an uncomparable type are never the same, and neither are
// comparable structs whose == would panic on an uncomparable value inside
// an interface field.
func Same(r, w any) (same bool) {
	tr, tw := reflect.TypeOf(r), reflect.TypeOf(w)
	if tr == nil || tr != tw || !tr.Comparable() {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return r == w
}
