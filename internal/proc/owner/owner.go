// Package owner names what an acpterm process leaves on the system — its
// cgroups and temporary directories — after the process itself, so that a
// later acpterm can tell what a dead one left behind and remove it: a
// SIGKILLed acpterm cannot clean up, and neither can an OOM-killed one.
//
// A name is
//
//	acpterm-PID-START-KIND-RANDOM
//
// where PID is the owner's process ID, START its start time in clock ticks
// after boot (field 22 of /proc/PID/stat, so that a reused PID is not
// taken for the owner), KIND what the thing is ("agent", "terms", "tmp",
// …) and RANDOM anything. Only Linux records START; elsewhere nothing is
// ever judged dead.
package owner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// prefix starts every name this package makes.
const prefix = "acpterm-"

// Prefix returns "acpterm-PID-START-KIND-" for the calling process: add a
// random part (os.MkdirTemp does) to make a name.
func Prefix(kind string) (string, error) {
	start, err := StartTime(os.Getpid())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s%d-%d-%s-", prefix, os.Getpid(), start, kind), nil
}

// TempDir makes a private temporary directory named after the calling
// process (see the package doc) in os.TempDir(). The first call of a
// process first removes the directories there that dead owners left.
func TempDir(kind string) (string, error) {
	cleanTempOnce.Do(func() { CleanDir(os.TempDir()) })
	p, err := Prefix(kind)
	if err != nil {
		p = prefix + kind + "-" // no start time: still made, never judged dead
	}
	return os.MkdirTemp("", p)
}

var cleanTempOnce sync.Once

// CleanDir removes the directories under dir named by this package whose
// owner is dead, and returns them.
func CleanDir(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		if e.IsDir() && strings.Count(e.Name(), "-") >= 4 && Dead(e.Name()) {
			path := filepath.Join(dir, e.Name())
			if os.RemoveAll(path) == nil {
				removed = append(removed, path)
			}
		}
	}
	return removed
}
