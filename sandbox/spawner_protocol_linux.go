package sandbox

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Wire messages. Descriptor fields index the descriptors that came with
// the frame; -1 means none.
type request struct {
	Op        string   `json:"op"`
	ID        uint64   `json:"id,omitempty"`
	Pid       int      `json:"pid,omitempty"`
	Path      string   `json:"path,omitempty"`
	Args      []string `json:"args,omitempty"`
	Env       []string `json:"env,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Setpgid   bool     `json:"setpgid,omitempty"`
	Setsid    bool     `json:"setsid,omitempty"`
	Setctty   bool     `json:"setctty,omitempty"`
	Pdeathsig int      `json:"pdeathsig,omitempty"`
	NFD       int      `json:"nfd,omitempty"`
	Stdin     int      `json:"stdin"`
	Stdout    int      `json:"stdout"`
	Stderr    int      `json:"stderr"`
	Cgroup    int      `json:"cgroup"`
}

type reply struct {
	Op     string `json:"op"`
	ID     uint64 `json:"id,omitempty"`
	Pid    int    `json:"pid,omitempty"`
	Errno  int    `json:"errno,omitempty"`
	Err    string `json:"err,omitempty"`
	Code   int    `json:"code,omitempty"`
	Signal int    `json:"signal,omitempty"`
}

func appendFrame(b, msg []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(msg)))
	return append(b, msg...)
}

// frameReader splits the byte stream into frames and keeps descriptors
// in arrival order. The kernel hands descriptors over with the first
// byte of the frame they were sent with, never later, so a frame's
// descriptors are at the head of the queue when the frame is complete.
type frameReader struct {
	data []byte
	fds  []int
}

func (fr *frameReader) addRights(oob []byte) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return err
	}
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return err
		}
		fr.fds = append(fr.fds, fds...)
	}
	return nil
}

func (fr *frameReader) next() (msg []byte, ok bool, err error) {
	if len(fr.data) < 4 {
		return nil, false, nil
	}
	n := binary.BigEndian.Uint32(fr.data)
	if n > maxFrame {
		return nil, false, fmt.Errorf("frame of %d bytes", n)
	}
	if len(fr.data) < 4+int(n) {
		return nil, false, nil
	}
	msg = fr.data[4 : 4+n]
	fr.data = fr.data[4+n:]
	return msg, true, nil
}

func (fr *frameReader) take(n int) ([]int, bool) {
	if n < 0 || n > maxFDs || n > len(fr.fds) {
		return nil, false
	}
	fds := fr.fds[:n:n]
	fr.fds = fr.fds[n:]
	return fds, true
}

func (fr *frameReader) closeAll() {
	closeAll(fr.fds)
	fr.fds = nil
}
