//go:build linux

package podmantest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpterm/acpterm/internal/proc/proctest"
)

// What this machine needs of a container (see .ci/run): runc (crun
// refuses hybrid cgroups), ulimits within root's own (it lacks
// CAP_SYS_RESOURCE), --init (nothing else reaps orphans in a container).

const (
	// Busybox is the static busybox the image is made of.
	Busybox = "/bin/busybox"
	// WS is the workspace directory of the image, empty.
	WS = "/ws"
	// Label marks the containers Start makes; its value is the PID of the
	// test process that made one, so that a later run removes what a
	// killed run left.
	Label = "io.acpterm.test.pid"
	// Life bounds a container that no cleanup removed.
	Life = 15 * time.Minute
)

// Missing says why Start cannot run here ("" when it can): podman, runc,
// catatonit (--init) or busybox-static is missing.
func Missing() string {
	for _, p := range []string{"podman", "runc", "catatonit"} {
		if _, err := exec.LookPath(p); err != nil {
			return p + " is missing: apt-get install -y --no-install-recommends podman runc netavark busybox-static catatonit (.ci/run does)"
		}
	}
	if _, err := os.Stat(Busybox); err != nil {
		return Busybox + " is missing: apt-get install -y busybox-static (.ci/run does)"
	}
	return ""
}

var image struct {
	once sync.Once
	name string
	err  error
	took time.Duration
}

// Image returns the test image, importing it the first time, and how long
// making it ready took. It is tagged with a hash of its rootfs, so later
// runs find it in podman's store and skip the import. The first call also
// removes the containers of test processes that are gone.
func Image() (string, time.Duration, error) {
	image.once.Do(func() {
		sweep()
		start := time.Now()
		rootfs, err := rootfs()
		if err != nil {
			image.err = err
			return
		}
		sum := sha256.Sum256(rootfs)
		image.name = "localhost/acpterm-test-busybox:" + hex.EncodeToString(sum[:6])
		if exec.Command("podman", "image", "exists", image.name).Run() == nil {
			image.took = time.Since(start)
			return
		}
		imp := exec.Command("podman", "import", "-", image.name)
		imp.Stdin = bytes.NewReader(rootfs)
		if out, err := imp.CombinedOutput(); err != nil {
			image.err = fmt.Errorf("podman import: %v\n%s", err, out)
			return
		}
		image.took = time.Since(start)
	})
	return image.name, image.took, image.err
}

// rootfs is a tarball of a root file system: busybox, a link for each of
// its applets, the directories a container needs, and WS. Fixed times and
// owners keep its hash stable.
func rootfs() ([]byte, error) {
	bb, err := os.ReadFile(Busybox)
	if err != nil {
		return nil, err
	}
	list, err := exec.Command(Busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list-full: %v", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	dirs := map[string]bool{}
	dir := func(name string, mode int64) {
		if !dirs[name] {
			dirs[name] = true
			_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: mtime})
		}
	}
	for _, d := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "root", strings.TrimPrefix(WS, "/")} {
		dir(d, 0o755)
	}
	dir("tmp", 0o1777)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb)), ModTime: mtime}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bb); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(list))
	for sc.Scan() {
		name := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "/")
		if name == "" || name == "bin/busybox" {
			continue
		}
		dir(path.Dir(name), 0o755)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: "/bin/busybox", ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Options shape a container.
type Options struct {
	// Cgroup mounts the host's cgroup2 hierarchy writable, with the
	// host's cgroup namespace, so that an exec server inside can give
	// each terminal a cgroup (isolation "cgroup"); without it the server
	// falls back to the /proc scan. Start skips the test on a host with
	// no cgroup2 hierarchy.
	Cgroup bool
}

// cgroup2Mount is where the host has its cgroup2 hierarchy ("" for none).
func cgroup2Mount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		_, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(line)
		if ok && strings.HasPrefix(post, "cgroup2 ") && len(f) > 4 {
			return f[4]
		}
	}
	return ""
}

// Start runs a container of the test image until the test ends, with
// --init, no network and runc; its cleanup removes it, on failure too,
// and checks that podman has no trace of it. It returns the container's
// name. The caller has checked Missing.
func Start(t testing.TB, opts Options) string {
	t.Helper()
	img, took, err := Image()
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "acpterm-test-" + hex.EncodeToString(b[:])
	args := []string{"run", "-d", "--rm", "--name", name,
		"--runtime", "runc",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
		"--init", "--network", "none",
		"--label", Label + "=" + strconv.Itoa(os.Getpid()),
		"--timeout", strconv.Itoa(int(Life.Seconds())),
	}
	if opts.Cgroup {
		mnt := cgroup2Mount()
		if mnt == "" {
			t.Skip("no cgroup2 hierarchy on this host")
		}
		args = append(args, "--cgroupns", "host", "-v", mnt+":"+mnt+":rw")
	}
	args = append(args, img, "sleep", strconv.Itoa(int(Life.Seconds())))
	start := time.Now()
	if out, err := exec.Command("podman", args...).CombinedOutput(); err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	t.Logf("container %s started in %v (image ready in %v)", name, time.Since(start).Round(time.Millisecond), took.Round(time.Millisecond))
	t.Cleanup(func() {
		if out, err := exec.Command("podman", "rm", "-f", "-i", "-t", "0", name).CombinedOutput(); err != nil {
			t.Errorf("podman rm: %v\n%s", err, out)
		}
		out, err := exec.Command("podman", "ps", "-a", "-q", "--filter", "name=^"+name+"$").Output()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("container %s is still there (%v): %s", name, err, out)
		}
	})
	return name
}

// sweep removes the test containers of test processes that are gone
// (killed before their cleanup ran).
func sweep() {
	out, err := exec.Command("podman", "ps", "-a", "--filter", "label="+Label,
		"--format", `{{.ID}} {{index .Labels "`+Label+`"}}`).Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, pid, ok := strings.Cut(line, " ")
		if n, err := strconv.Atoi(pid); ok && err == nil && !proctest.Alive(n) {
			_ = exec.Command("podman", "rm", "-f", "-i", "-t", "0", id).Run()
		}
	}
}

// Exec runs a command in the container and returns its output.
func Exec(t testing.TB, name string, argv ...string) string {
	t.Helper()
	out, err := exec.Command("podman", append([]string{"exec", name}, argv...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman exec %s %q: %v\n%s", name, argv, err, out)
	}
	return string(out)
}

// PS lists the container's processes whose command line holds one of
// words, as busybox ps shows them inside.
func PS(t testing.TB, name string, words ...string) []string {
	t.Helper()
	var hits []string
	for _, line := range strings.Split(Exec(t, name, "ps", "-o", "pid,args"), "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				hits = append(hits, strings.TrimSpace(line))
				break
			}
		}
	}
	return hits
}

// WaitPSGone asks the container's ps until none of words shows or within
// ends (each ask is a podman exec, a few hundred ms); it returns what
// still shows.
func WaitPSGone(t testing.TB, name string, within time.Duration, words ...string) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := PS(t, name, words...)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}
