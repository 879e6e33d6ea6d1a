package remote_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// acptermPkg is the command the tests build and copy to targets.
const acptermPkg = "github.com/acpterm/acpterm/cmd/acpterm"

// builds are acpterm binaries built once for the package's tests, in a
// temp dir that TestMain removes (removeBuilds).
var builds struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string // by kind
	errs map[string]error
}

// acptermBuild returns the path of acpterm built the way kind says:
// "static" with CGO_ENABLED=0 (what travels to a target without libc),
// "default" as a plain go build makes it here (linked against libc
// through runtime/cgo when a C compiler is present).
func acptermBuild(t testing.TB, kind string) string {
	t.Helper()
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if p, ok := builds.bins[kind]; ok {
		return p
	}
	if err, ok := builds.errs[kind]; ok {
		t.Fatal(err)
	}
	if builds.dir == "" {
		sweepBuilds()
		dir, err := os.MkdirTemp("", "remote-builds-"+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			t.Fatal(err)
		}
		builds.dir = dir
		builds.bins = map[string]string{}
		builds.errs = map[string]error{}
	}
	// The name sets the file apart from the running test binary's
	// siblings, which Install would look for as acpterm-GOOS-GOARCH. The
	// build is shared (proctest.GoBuild): an unchanged acpterm is not
	// linked again, here or by the other packages' tests.
	var env []string
	switch kind {
	case "static":
		env = []string{"CGO_ENABLED=0"}
	case "default":
	default:
		t.Fatalf("no build kind %q", kind)
	}
	dir := filepath.Join(builds.dir, kind)
	err := os.MkdirAll(dir, 0o755)
	var out string
	if err == nil {
		out, err = proctest.GoBuildEnv(dir, "acpterm", env, "build", acptermPkg)
	}
	if err != nil {
		builds.errs[kind] = fmt.Errorf("building acpterm (%s): %v", kind, err)
		t.Fatal(builds.errs[kind])
	}
	builds.bins[kind] = out
	return out
}

// sweepBuilds removes the builds of test processes that are gone: a
// timed-out test binary panics past TestMain's cleanup.
func sweepBuilds() {
	if runtime.GOOS != "linux" {
		return // pidExists reads /proc
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "remote-builds-*-*"))
	for _, d := range dirs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), "remote-builds-"), "-")
		if n, err := strconv.Atoi(pid); err == nil && n != os.Getpid() && !pidExists(n) {
			_ = os.RemoveAll(d)
		}
	}
}

func pidExists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// removeBuilds removes what acptermBuild built; TestMain calls it.
func removeBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
}
