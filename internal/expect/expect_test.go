package expect

import (
	"fmt"
	"testing"
	"time"
)

func TestExpect(t *testing.T) {
	b := NewBuffer()
	fmt.Fprint(b, "one two ")
	b.Expect(t, "one", time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3 {
			fmt.Fprintf(b, "line %d\n", i)
		}
	}()
	b.Expect(t, "line 2\n", 10*time.Second) // written after the wait began
	<-done
	fmt.Fprint(b, "one")
	b.Expect(t, "one", time.Second) // the second "one": matches advance
	if got := b.String(); got != "one two line 0\nline 1\nline 2\none" {
		t.Fatalf("String() = %q", got)
	}
}
