package procstat

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// line builds a stat line whose command name is comm: 52 fields, as on
// Linux 6, with ppid 77, process group 78, session 79 and start time
// 12345.
func line(comm string) string {
	f := []string{"42", "(" + comm + ")", "S", "77", "78", "79"}
	for n := 7; n <= 52; n++ {
		v := "0"
		if n == 22 {
			v = "12345"
		}
		f = append(f, v)
	}
	return strings.Join(f, " ") + "\n"
}

func TestParse(t *testing.T) {
	for _, comm := range []string{"sh", "a b", "x) Z 1 2", "))", "(", ""} {
		st, err := Parse([]byte(line(comm)))
		if err != nil || st != (Stat{State: 'S', PPid: 77, PGrp: 78, Session: 79, Start: 12345}) {
			t.Errorf("comm %q: Parse = %+v, %v", comm, st, err)
		}
	}
	for _, bad := range []string{"", "42 sh S 1", "42 (sh) S 1 2 3", "42 (sh) SS" + line("x")[7:], strings.Replace(line("sh"), " 77 ", " -1 ", 1), strings.Replace(line("sh"), " 12345 ", " x ", 1)} {
		if st, err := Parse([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrMalformed", bad, st, err)
		}
	}
}

func TestReadSelf(t *testing.T) {
	st, err := Read(os.Getpid())
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	// The state is the main thread's, which may be asleep while another
	// thread reads.
	if st.PPid != os.Getppid() || st.State != 'R' && st.State != 'S' || st.Start == 0 || st.PGrp != syscall.Getpgrp() {
		t.Fatalf("Read(self) = %+v, want parent %d, group %d, running or asleep, a start time", st, os.Getppid(), syscall.Getpgrp())
	}
	if _, err := Read(-1); err == nil {
		t.Fatal("Read(-1) succeeded")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(line("sh")))
	f.Add([]byte(line("a) R 1 2 3")))
	f.Add([]byte("1 (x) Z"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Parse(b)
		if err != nil {
			return
		}
		// What parsed must be what the fields after the last ')' say.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		session, _ := strconv.Atoi(f[3])
		start, _ := strconv.ParseUint(f[fieldStart-fieldState], 10, 64)
		if f[0] != string([]byte{st.State}) || ppid != st.PPid || pgrp != st.PGrp || session != st.Session || start != st.Start {
			t.Fatalf("Parse(%q) = %+v, fields %q", b, st, f)
		}
	})
}
