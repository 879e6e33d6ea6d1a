package jsonrpc2

import "reflect"

// SameStream reports whether r and w are one object (a socket, a pty), which
// must then be closed once, not once as the reader and once as the writer.
// Values of an uncomparable type are never the same, and neither are
// comparable structs whose == would panic on an uncomparable value inside
// an interface field.
func SameStream(r, w any) (same bool) {
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
