package sandbox

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzFrameReader feeds the helper's frame splitter arbitrary bytes in
// arbitrary pieces: it must hand out exactly the frames that were sent,
// in order, and refuse a length over maxFrame, never read past what it
// holds, and never panic.
func FuzzFrameReader(f *testing.F) {
	f.Add(appendFrame(appendFrame(nil, []byte(`{"op":"start"}`)), []byte(`{"op":"reap","pid":3}`)), uint8(3))
	f.Add([]byte{0, 0, 0, 0}, uint8(1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 'x'}, uint8(2))
	f.Add(appendFrame(nil, nil)[:3], uint8(7))
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8) {
		step := int(piece)%16 + 1
		fr := &frameReader{}
		var got [][]byte
		var failed bool
		for off := 0; off < len(stream) && !failed; off += step {
			fr.data = append(fr.data, stream[off:min(off+step, len(stream))]...)
			for {
				msg, ok, err := fr.next()
				if err != nil {
					failed = true
					break
				}
				if !ok {
					break
				}
				got = append(got, bytes.Clone(msg))
			}
		}
		// What the frames say, decoded independently.
		var want [][]byte
		rest := stream
		wantErr := false
		for len(rest) >= 4 {
			n := binary.BigEndian.Uint32(rest)
			if n > maxFrame {
				wantErr = true
				break
			}
			if uint64(len(rest)) < 4+uint64(n) {
				break
			}
			want = append(want, rest[4:4+n])
			rest = rest[4+n:]
		}
		if failed != wantErr {
			t.Fatalf("error %v, want %v", failed, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%d frames, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
}

func TestFrameReaderTake(t *testing.T) {
	t.Parallel()
	fr := &frameReader{fds: []int{10, 11, 12}}
	for _, n := range []int{-1, maxFDs + 1, 4} {
		if _, ok := fr.take(n); ok {
			t.Errorf("take(%d) of 3 descriptors succeeded", n)
		}
	}
	fds, ok := fr.take(2)
	if !ok || len(fds) != 2 || fds[0] != 10 || fds[1] != 11 || len(fr.fds) != 1 {
		t.Fatalf("take(2) = %v, %v; left %v", fds, ok, fr.fds)
	}
	// The descriptors handed out cannot be overwritten by later appends.
	fr.fds = append(fr.fds, 13)
	if fds[0] != 10 || fds[1] != 11 {
		t.Fatalf("taken descriptors changed to %v", fds)
	}
}
