package probe

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/acpterm/acpterm/internal/text/utf8cut"
)

// The confinement cases: what the client lets a command write and reach,
// as observed. Nothing in ACP asks a client to sandbox commands, so they
// only report; a sandboxing client shows "denied" where another shows
// "allowed".

// tryWrite is a shell function: `try LABEL DIR` tries to create a file in
// DIR, removes it again, and prints "LABEL allowed" or "LABEL denied"
// with the error's last part (e.g. Permission denied).
const tryWrite = `try() {
  f="$2/.acpterm-probe-$$"
  if err=$( (: > "$f") 2>&1 ); then rm -f "$f"; echo "$1 allowed"; else echo "$1 denied (${err##*: })"; fi
}
`

func caseWriteOutsideCwd(ctx context.Context, t *tester) verdict {
	_, out, err := runToEnd(ctx, t, t.sh(tryWrite+`if [ -z "$HOME" ] || [ ! -d "$HOME" ]; then echo 'no $HOME to try'
elif [ "$HOME" = "$1" ]; then echo '$HOME is the session cwd'
else try '' "$HOME"; fi`, t.cwd))
	if err != nil {
		return note("%v", err)
	}
	return note("writing in $HOME, outside the session cwd: %s", lines(out.Output))
}

func caseWriteOutsideTmpdir(ctx context.Context, t *tester) verdict {
	_, out, err := runToEnd(ctx, t, t.sh(tryWrite+`if [ -n "$TMPDIR" ]; then try 'TMPDIR set,' "$TMPDIR"; else echo 'TMPDIR unset'; fi
[ "$TMPDIR" = /tmp ] || try '/tmp' /tmp`))
	if err != nil {
		return note("%v", err)
	}
	return note("%s", lines(out.Output))
}

// caseLoopback opens a listener on the host's 127.0.0.1 and has a command
// connect to it. Whether a connection arrived is read from the listener,
// not from the command, which may lack a tool to connect with.
func caseLoopback(ctx context.Context, t *tester) verdict {
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return note("the probe cannot listen on 127.0.0.1: %v", err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, out, err := runToEnd(ctx, t, t.sh(`p=$1
if command -v bash >/dev/null 2>&1; then bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>&1 && echo connected
elif command -v nc >/dev/null 2>&1; then nc -z -w 2 127.0.0.1 "$p" 2>&1 && echo connected
elif command -v python3 >/dev/null 2>&1; then python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2)" "$p" 2>&1 && echo connected
else echo 'no bash, nc or python3 to connect with'; fi`, strconv.Itoa(port)))
	if err != nil {
		return note("%v", err)
	}
	// The command has ended: a connection it made waits in the backlog.
	_ = ln.SetDeadline(time.Now().Add(200 * time.Millisecond))
	c, aerr := ln.Accept()
	if aerr == nil {
		c.Close()
		return note("a command reached a listener on the host's 127.0.0.1")
	}
	var ne net.Error
	if errors.As(aerr, &ne) && ne.Timeout() {
		return note("no connection reached the host's 127.0.0.1: %s", lines(out.Output))
	}
	return note("could not tell: %v", aerr)
}

// lines joins a command's output lines with " ; " for a report.
func lines(s string) string {
	return utf8cut.Head(strings.ReplaceAll(lf(strings.TrimSpace(s)), "\n", "; "), 300)
}
