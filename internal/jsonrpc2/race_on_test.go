//go:build race

package jsonrpc2

// raceEnabled: the race detector multiplies memory use, so RSS bounds are not measured.
const raceEnabled = true
