module github.com/acpterm/acpterm

go 1.26.0

require (
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require github.com/creack/pty v1.1.24

require github.com/landlock-lsm/go-landlock v0.11.2

require kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
