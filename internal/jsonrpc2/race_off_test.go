//go:build !race

package jsonrpc2

const raceEnabled = false
