package remote

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Kind is the transport a Target is reached through.
type Kind string

// The transports: each is the user's own tool, so that its configuration
// (~/.ssh/config, keys, agent, known_hosts, ProxyJump; the container
// engine's connection; kubeconfig and its contexts) applies.
const (
	SSH        Kind = "ssh"
	Podman     Kind = "podman"
	Docker     Kind = "docker"
	Kubernetes Kind = "k8s"
)

// Target is a place to run commands, parsed by ParseTarget.
type Target struct {
	Kind Kind
	// SSH: User ("" for ssh's own choice), Host (a name, an address, an
	// IPv6 address without brackets) and Port (0 for ssh's own choice).
	User string
	Host string
	Port int
	// Podman and Docker: the container's name or ID. Kubernetes: the
	// container in the pod ("" for kubectl's default).
	Container string
	// Kubernetes: Context ("" for kubeconfig's current context),
	// Namespace and Pod.
	Context   string
	Namespace string
	Pod       string
	// Dir is the directory on the target in which commands run by
	// default: absolute, or "~" or "~/..." for the target user's home.
	// "" means the exec server's own default (the home over ssh, the
	// container's workdir).
	Dir string
}

// ErrTarget is wrapped by every ParseTarget error.
var ErrTarget = errors.New("remote: invalid target")

// maxTargetLen bounds a target string; no real one comes near it.
const maxTargetLen = 4096

// ParseTarget parses a target. The grammar:
//
//	ssh://[USER@]HOST[:PORT][/DIR]
//	podman://CONTAINER[/DIR]
//	docker://CONTAINER[/DIR]
//	k8s://NAMESPACE/POD[/CONTAINER][:DIR]
//	k8s://CONTEXT/NAMESPACE/POD/[CONTAINER][:DIR]
//
// For ssh, podman and docker, DIR is the path after the first "/" that
// follows the host or container, taken as absolute ("ssh://h/srv/app" is
// /srv/app); "/~" and "/~/x" name the target user's home and a directory
// in it. HOST may be an IPv6 address in brackets. For Kubernetes, DIR
// follows the first ":" and is absolute or starts with "~"; the
// segments are separated by "/", and since three segments could be
// either CONTEXT/NAMESPACE/POD or NAMESPACE/POD/CONTAINER, three mean the
// latter, and a context is written with four, the last (the container)
// empty for the pod's default: k8s://kind-dev/default/web/:/app. So a
// context whose name holds "/" or ":" cannot be named here; make it
// kubectl's current context instead.
//
// Names are checked against their tools' own rules (container names as
// Docker's [a-zA-Z0-9][a-zA-Z0-9_.-]*, Kubernetes names as DNS-1123),
// nothing may start with "-" (it would be read as an option), and no
// part may hold whitespace or control characters.
func ParseTarget(s string) (Target, error) {
	if len(s) > maxTargetLen {
		return Target{}, fmt.Errorf("%w: longer than %d bytes", ErrTarget, maxTargetLen)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return Target{}, fmt.Errorf("%w %q: want ssh://, podman://, docker:// or k8s://", ErrTarget, s)
	}
	if i := strings.IndexFunc(rest, badRune); i >= 0 {
		return Target{}, fmt.Errorf("%w %q: whitespace or a control character at byte %d", ErrTarget, s, len(scheme)+3+i)
	}
	var t Target
	var err error
	switch scheme {
	case "ssh":
		t, err = parseSSH(rest)
	case "podman", "docker":
		t, err = parseContainer(Kind(scheme), rest)
	case "k8s", "kubernetes":
		t, err = parseK8s(rest)
	default:
		return Target{}, fmt.Errorf("%w %q: unknown scheme %q: want ssh, podman, docker or k8s", ErrTarget, s, scheme)
	}
	if err != nil {
		return Target{}, fmt.Errorf("%w %q: %v", ErrTarget, s, err)
	}
	return t, nil
}

// badRune: whitespace and control characters, which no name may hold and
// which a remote shell or a terminal would read as something else.
func badRune(r rune) bool {
	return r <= ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == '\ufffd'
}

// splitDir cuts "/DIR" off the end of rest for ssh, podman and docker.
func splitDir(rest string) (head, dir string, err error) {
	head, p, ok := strings.Cut(rest, "/")
	if !ok {
		return head, "", nil
	}
	dir, err = cleanDir("/" + p)
	return head, dir, err
}

// cleanDir checks a DIR: "/~" and "/~/x" become "~" and "~/x".
func cleanDir(d string) (string, error) {
	if d == "/~" || strings.HasPrefix(d, "/~/") {
		d = d[1:]
	}
	switch {
	case d == "~" || strings.HasPrefix(d, "~/"):
	case strings.HasPrefix(d, "/"):
	default:
		return "", fmt.Errorf("directory %q is neither absolute nor in ~", d)
	}
	if len(d) > 1 {
		d = strings.TrimSuffix(d, "/")
	}
	return d, nil
}

func parseSSH(rest string) (Target, error) {
	t := Target{Kind: SSH}
	authority, dir, err := splitDir(rest)
	if err != nil {
		return t, err
	}
	t.Dir = dir
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		t.User, authority = authority[:at], authority[at+1:]
		if t.User == "" || strings.ContainsAny(t.User, "@:/[]") || t.User[0] == '-' {
			return t, fmt.Errorf("user %q is not a user name", t.User)
		}
	}
	host, port := authority, ""
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return t, errors.New("an IPv6 address in [ has no ]")
		}
		host = authority[1:end]
		if net.ParseIP(host) == nil || !strings.Contains(host, ":") {
			return t, fmt.Errorf("%q is not an IPv6 address", host)
		}
		switch after := authority[end+1:]; {
		case after == "":
		case strings.HasPrefix(after, ":"):
			port = after[1:]
		default:
			return t, fmt.Errorf("%q after the address", after)
		}
	} else if h, p, ok := strings.Cut(authority, ":"); ok {
		host, port = h, p
	}
	if host == "" {
		return t, errors.New("no host")
	}
	if !t.isIPv6(host) && !validHost(host) {
		return t, fmt.Errorf("host %q is not a host name or address", host)
	}
	t.Host = host
	if port != "" || strings.HasSuffix(authority, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '+' || port[0] == '0' {
			return t, fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
		t.Port = n
	}
	return t, nil
}

func (Target) isIPv6(h string) bool { return strings.Contains(h, ":") && net.ParseIP(h) != nil }

// validHost accepts what ssh can take as a host: letters, digits, "-",
// "." and "_" (ssh_config Host aliases use it), not starting with "-".
func validHost(h string) bool {
	if h == "" || h[0] == '-' || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}

func parseContainer(kind Kind, rest string) (Target, error) {
	t := Target{Kind: kind}
	name, dir, err := splitDir(rest)
	if err != nil {
		return t, err
	}
	if !validContainer(name) {
		return t, fmt.Errorf("container %q is not a container name or ID ([a-zA-Z0-9][a-zA-Z0-9_.-]*)", name)
	}
	t.Container, t.Dir = name, dir
	return t, nil
}

// validContainer is Docker's (and podman's) rule for container names,
// which IDs also satisfy.
func validContainer(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for i, r := range n {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || (r != '_' && r != '.' && r != '-')) {
			return false
		}
	}
	return true
}

func parseK8s(rest string) (Target, error) {
	t := Target{Kind: Kubernetes}
	path := rest
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		path = rest[:i]
		d := rest[i+1:]
		if d == "" {
			return t, errors.New("nothing after \":\"")
		}
		if !strings.HasPrefix(d, "/") && !strings.HasPrefix(d, "~") {
			return t, fmt.Errorf("directory %q is neither absolute nor in ~", d)
		}
		if strings.HasPrefix(d, "~") && d != "~" && !strings.HasPrefix(d, "~/") {
			return t, fmt.Errorf("directory %q: ~USER is not supported", d)
		}
		if d != "/" {
			d = strings.TrimSuffix(d, "/")
		}
		t.Dir = d
	}
	seg := strings.Split(path, "/")
	switch len(seg) {
	case 2:
		t.Namespace, t.Pod = seg[0], seg[1]
	case 3:
		t.Namespace, t.Pod, t.Container = seg[0], seg[1], seg[2]
	case 4:
		t.Context, t.Namespace, t.Pod, t.Container = seg[0], seg[1], seg[2], seg[3]
		if t.Context == "" || t.Context[0] == '-' {
			return t, fmt.Errorf("context %q is empty or starts with -", t.Context)
		}
	default:
		return t, errors.New("want NAMESPACE/POD, NAMESPACE/POD/CONTAINER or CONTEXT/NAMESPACE/POD/[CONTAINER]")
	}
	if !dns1123(t.Namespace, 63) {
		return t, fmt.Errorf("namespace %q is not a Kubernetes name", t.Namespace)
	}
	if !dns1123(t.Pod, 253) {
		return t, fmt.Errorf("pod %q is not a Kubernetes name", t.Pod)
	}
	if (len(seg) == 3 || t.Container != "") && !dns1123(t.Container, 63) {
		return t, fmt.Errorf("container %q is not a Kubernetes name", t.Container)
	}
	return t, nil
}

// dns1123 is Kubernetes' rule for names: lowercase letters, digits, "-"
// and ".", starting and ending with a letter or digit.
func dns1123(n string, maxLen int) bool {
	if n == "" || len(n) > maxLen {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && ((c != '-' && c != '.') || i == 0 || i == len(n)-1) {
			return false
		}
	}
	return true
}

// String writes the target back in ParseTarget's grammar.
func (t Target) String() string {
	switch t.Kind {
	case SSH:
		var b strings.Builder
		b.WriteString("ssh://")
		if t.User != "" {
			b.WriteString(t.User + "@")
		}
		if t.isIPv6(t.Host) {
			b.WriteString("[" + t.Host + "]")
		} else {
			b.WriteString(t.Host)
		}
		if t.Port != 0 {
			b.WriteString(":" + strconv.Itoa(t.Port))
		}
		return b.String() + slashDir(t.Dir)
	case Podman, Docker:
		return string(t.Kind) + "://" + t.Container + slashDir(t.Dir)
	case Kubernetes:
		s := "k8s://"
		if t.Context != "" {
			s += t.Context + "/" + t.Namespace + "/" + t.Pod + "/" + t.Container
		} else {
			s += t.Namespace + "/" + t.Pod
			if t.Container != "" {
				s += "/" + t.Container
			}
		}
		if t.Dir != "" {
			s += ":" + t.Dir
		}
		return s
	}
	return "invalid target"
}

func slashDir(d string) string {
	switch {
	case d == "":
		return ""
	case strings.HasPrefix(d, "/"):
		return d
	}
	return "/" + d
}
