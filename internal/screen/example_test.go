package screen_test

import (
	"fmt"

	"github.com/acpterm/acpterm/internal/screen"
)

func Example() {
	s := screen.New(80, 24, 4096)
	s.Write([]byte("\x1b[1mbuilding\x1b[0m\r\n"))
	for _, p := range []string{"10%", "60%", "100%"} {
		s.Write([]byte("\r\x1b[Kprogress " + p))
	}
	s.Write([]byte("\r\ndone\r\n"))
	text, truncated := s.Text()
	fmt.Printf("%q %v\n", text, truncated)
	// Output: "building\nprogress 100%\ndone\n" false
}
