module github.com/acpterm/acpterm

go 1.26.0

require (
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require github.com/creack/pty v1.1.24

require (
	github.com/charmbracelet/x/ansi v0.11.9
	github.com/landlock-lsm/go-landlock v0.11.2
	github.com/mattn/go-runewidth v0.0.31
	github.com/modelcontextprotocol/go-sdk v1.8.0
)

require (
	github.com/clipperhouse/displaywidth v0.11.0 // indirect
	github.com/clipperhouse/uax29/v2 v2.7.0 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/lucasb-eyer/go-colorful v1.4.1 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
)
