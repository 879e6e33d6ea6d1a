module github.com/acpterm/acpterm/bench

go 1.26.0

require (
	github.com/acpterm/acpterm v0.0.0
	github.com/coder/acp-go-sdk v0.13.5
)

require golang.org/x/sys v0.50.0 // indirect

replace github.com/acpterm/acpterm => ../
