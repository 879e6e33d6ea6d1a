package permission

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// signalWriter reports each write on a channel.
type signalWriter struct{ wrote chan string }

func (w signalWriter) Write(p []byte) (int, error) {
	w.wrote <- string(p)
	return len(p), nil
}

// TestTurnReaderYieldsToQuestion: while the turn's reader waits for
// keys, a question takes the keyboard: the key typed after the question
// shows is its answer, not the reader's; afterwards the reader gets the
// next keys again.
func TestTurnReaderYieldsToQuestion(t *testing.T) {
	r, w := io.Pipe()
	out := signalWriter{make(chan string, 16)}
	p := NewPrompter(r, out, nil, nil)
	defer p.Close()
	stop := make(chan struct{})
	got := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			k, err := p.KeysBetweenQuestions(stop)
			if err != nil {
				return
			}
			got <- string(k)
		}
	}()
	defer func() {
		close(stop)
		<-done
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	answered := make(chan answer, 1)
	go func() { answered <- p.ask(ctx, nil, "proceed? ") }()
	for s := range out.wrote {
		if strings.Contains(s, "proceed?") {
			break
		}
	}
	if _, err := w.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if a := <-answered; a != answerYes {
		t.Fatalf("the question got %v, want yes", a)
	}
	if _, err := w.Write([]byte("/jobs\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-got:
		if k != "/jobs\n" {
			t.Fatalf("the reader got %q, want the line typed after the question", k)
		}
	case <-ctx.Done():
		t.Fatal("the reader got nothing after the question")
	}
	w.Close()
}
