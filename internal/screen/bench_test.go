package screen_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/acpterm/acpterm/internal/screen"
)

// benchmarkInput writes input to one screen over and over in 4 KiB
// pieces, as a pty read hands it over, and reports MiB/s and the heap in
// use at the end (the limit is 1 MiB, so the heap must stay near it).
func benchmarkInput(b *testing.B, input []byte) {
	const chunk = 4 << 10
	s := screen.New(120, 40, 1<<20)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(input); i += chunk {
			s.Write(input[i:min(i+chunk, len(input))])
		}
	}
	if txt, _ := s.Text(); len(txt) == 0 {
		b.Fatal("no text")
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	runtime.KeepAlive(s)
}

// lineOutput is what a build or a test run prints: lines of various
// lengths, some with colours.
func lineOutput() []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < 8<<20; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&sb, "\x1b[32mok\x1b[0m  \tgithub.com/example/pkg%d\t0.%03ds\r\n", i, i%1000)
		} else {
			fmt.Fprintf(&sb, "line %d: %s\r\n", i, strings.Repeat("lorem ipsum ", i%9))
		}
	}
	return []byte(sb.String())
}

// progressBar is a bar redrawn after CR, with colours and EL.
func progressBar() []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < 8<<20; i++ {
		p := i % 101
		fmt.Fprintf(&sb, "\r\x1b[K\x1b[1mdownloading\x1b[0m [%s%s] %3d%%", strings.Repeat("#", p/2), strings.Repeat(" ", 50-p/2), p)
	}
	return []byte(sb.String())
}

func BenchmarkLines(b *testing.B)       { benchmarkInput(b, lineOutput()) }
func BenchmarkProgressBar(b *testing.B) { benchmarkInput(b, progressBar()) }
