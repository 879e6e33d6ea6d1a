package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Under DenyNetwork the command has a network namespace of its own, but
// not every socket lives in a network namespace: pathname unix sockets of
// the host (the Docker or podman socket, an X server, an SSH agent,
// systemd's journal and /dev/log) stay reachable by path, Landlock only
// checks connecting to one from ABI 9 on, and some address families
// (AF_VSOCK, a way out of a virtual machine to its host; Bluetooth) are
// not namespaced at all. So a seccomp filter lets the socket calls
// through only as an allow-list:
//
//   - socket(2) for the families a network namespace holds and that the
//     command needs for its loopback and its own interfaces: AF_INET,
//     AF_INET6, AF_NETLINK. AF_UNIX is refused with EPERM, for connect(2)
//     and sendto(2) by path; every other family with EAFNOSUPPORT, as a
//     kernel without it would;
//   - socketpair(2) only for AF_UNIX with type SOCK_STREAM or
//     SOCK_SEQPACKET, for pipes between processes: a datagram pair, though
//     created connected, still sends to any address given to sendto(2),
//     and the kernel turns SOCK_RAW into SOCK_DGRAM for unix sockets, so
//     any other type is refused, not just SOCK_DGRAM;
//   - io_uring_setup(2): a ring's socket and connect operations do not
//     pass through the system call filter.
//
// A seccomp filter sees the registers, not the memory they point to, so
// it cannot tell a pathname address from an abstract one: abstract
// sockets are cut as well, which the network namespace and Landlock's
// scoping already did. The filter is written by hand, not assembled by a
// library: it is a few dozen instructions per architecture, and it must
// refuse what it does not know (the 32-bit system calls an x86-64 process
// can make, whose socketcall(2) multiplexes every socket call), where the
// libraries at hand allow any architecture but the one they were built
// for.

// seccompRule is one system call the filter refuses, wholly or when its
// arguments say so.
type seccompRule struct {
	nr    uint32
	when  ruleCond
	errno uint32 // what the refused call returns
}

type ruleCond int

const (
	always       ruleCond = iota // every call
	socketFamily                 // socket(2) of a family not in socketFamilies
	streamPairs                  // socketpair(2) but of AF_UNIX, SOCK_STREAM or SOCK_SEQPACKET
)

// socketFamilies are the families socket(2) may create under DenyNetwork:
// all three are held by the command's network namespace.
var socketFamilies = []uint32{unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// seccompArch is the rules for the system calls of one architecture, as
// seccomp_data.arch names it.
type seccompArch struct {
	audit uint32
	// x32: refuse the x32 ABI's system calls (numbers with bit 30 set),
	// which an x86-64 process can make under the same arch value.
	x32   bool
	rules []seccompRule
}

// Errors the refused calls return. EPERM for sockets: the program is told
// it may not, and most say so. ENOSYS for io_uring: programs that use it
// (libuv, for one) fall back to ordinary system calls when it is absent.
// EAFNOSUPPORT for a family the filter does not know: what a kernel
// built without it answers, which programs that probe families expect.
const (
	errnoSocket  = uint32(unix.EPERM)
	errnoFamily  = uint32(unix.EAFNOSUPPORT)
	errnoIOURing = uint32(unix.ENOSYS)
)

// unixSocketArches returns the filter's rules for this build, nil when
// the architecture is not one the filter knows.
func unixSocketArches() []seccompArch {
	switch runtime.GOARCH {
	case "amd64":
		return []seccompArch{
			{audit: unix.AUDIT_ARCH_X86_64, x32: true, rules: nativeRules()},
			// The i386 system calls (int 0x80) of the same process: their
			// numbers are i386's, and socketcall(2) is refused whole, since
			// its arguments are in memory.
			{audit: unix.AUDIT_ARCH_I386, rules: []seccompRule{
				{102, always, errnoSocket},       // socketcall
				{359, socketFamily, errnoSocket}, // socket
				{360, streamPairs, errnoSocket},  // socketpair
				{425, always, errnoIOURing},      // io_uring_setup
			}},
		}
	case "arm64", "riscv64", "loong64":
		// No second ABI with another arch value is reachable by these
		// builds' rules; arm64's 32-bit compat calls are refused whole
		// below, with any other architecture.
		return []seccompArch{{audit: nativeAudit(), rules: nativeRules()}}
	}
	return nil
}

func nativeAudit() uint32 {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64
	case "riscv64":
		return unix.AUDIT_ARCH_RISCV64
	case "loong64":
		return unix.AUDIT_ARCH_LOONGARCH64
	}
	return 0
}

func nativeRules() []seccompRule {
	return []seccompRule{
		{unix.SYS_SOCKET, socketFamily, errnoSocket},
		{unix.SYS_SOCKETPAIR, streamPairs, errnoSocket},
		{unix.SYS_IO_URING_SETUP, always, errnoIOURing},
	}
}

// Offsets in struct seccomp_data: nr, arch, instruction pointer, then the
// six arguments, 64 bits each. The low half of an argument is first on
// little-endian machines, which all of the above are; the socket calls'
// domain and type are ints, so the low half is all the kernel reads.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

const (
	ldAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	andK   = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	retK   = unix.BPF_RET | unix.BPF_K
	x32Bit = 0x40000000
)

// unixSocketFilter assembles the program: for each known architecture a
// block that checks the call number against its rules; calls of any
// other architecture kill the process (they could be anything).
func unixSocketFilter(arches []seccompArch) ([]unix.SockFilter, error) {
	if len(arches) == 0 {
		return nil, fmt.Errorf("no seccomp rules for %s", runtime.GOARCH)
	}
	prog := []unix.SockFilter{stmt(ldAbs, offArch)}
	for _, a := range arches {
		block := archBlock(a)
		if len(block) > 255 {
			return nil, errors.New("seccomp block too long")
		}
		prog = append(prog, jump(jeq, a.audit, 0, uint8(len(block))))
		prog = append(prog, block...)
		// Each block ends in a return; the accumulator still holds the
		// arch for the next comparison.
	}
	prog = append(prog, stmt(retK, unix.SECCOMP_RET_KILL_PROCESS))
	return prog, nil
}

// archBlock is one architecture's rules. It loads the call number and
// ends in a return on every path.
func archBlock(a seccompArch) []unix.SockFilter {
	errno := func(e uint32) unix.SockFilter { return stmt(retK, unix.SECCOMP_RET_ERRNO|e) }
	allow := stmt(retK, unix.SECCOMP_RET_ALLOW)
	b := []unix.SockFilter{stmt(ldAbs, offNr)}
	if a.x32 {
		b = append(b, jump(jge, x32Bit, 0, 1), errno(uint32(unix.ENOSYS)))
	}
	for _, r := range a.rules {
		var body []unix.SockFilter
		switch r.when {
		case always:
			body = []unix.SockFilter{errno(r.errno)}
		case socketFamily:
			body = familyBody(r.errno)
		case streamPairs:
			body = []unix.SockFilter{
				stmt(ldAbs, offArg0),
				jump(jeq, unix.AF_UNIX, 0, 4),
				stmt(ldAbs, offArg1),
				stmt(andK, 0xf), // SOCK_TYPE_MASK: without SOCK_CLOEXEC, SOCK_NONBLOCK
				jump(jeq, unix.SOCK_STREAM, 2, 0),
				jump(jeq, unix.SOCK_SEQPACKET, 1, 0),
				errno(r.errno),
				allow,
			}
		}
		// Not this call: skip its body, which returns on every path.
		b = append(b, jump(jeq, r.nr, 0, uint8(len(body))))
		b = append(b, body...)
	}
	return append(b, allow)
}

// familyBody is socket(2)'s rule: the families of socketFamilies pass,
// AF_UNIX gets unixErrno, any other family errnoFamily. It loads the
// first argument and returns on every path.
func familyBody(unixErrno uint32) []unix.SockFilter {
	n := len(socketFamilies)
	// After the load: one comparison per allowed family, jumping to the
	// final allow; then AF_UNIX, jumping to its errno; then the errno of
	// the rest, AF_UNIX's, and allow.
	b := []unix.SockFilter{stmt(ldAbs, offArg0)}
	for i, f := range socketFamilies {
		// From comparison i (at 1+i), allow is at 1+n+3.
		b = append(b, jump(jeq, f, uint8(n+3-i-1), 0))
	}
	b = append(b,
		jump(jeq, unix.AF_UNIX, 1, 0),
		stmt(retK, unix.SECCOMP_RET_ERRNO|errnoFamily),
		stmt(retK, unix.SECCOMP_RET_ERRNO|unixErrno),
		stmt(retK, unix.SECCOMP_RET_ALLOW),
	)
	return b
}

// seccompAvailable reports whether the kernel can load the filter.
func seccompAvailable() error {
	if unixSocketArches() == nil {
		return fmt.Errorf("no seccomp rules for %s", runtime.GOARCH)
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}

// denyUnixSockets loads the filter on this thread. The caller has set
// no_new_privs (restrictThread does), which an unprivileged filter needs;
// it is set here again for a plan without Landlock.
func denyUnixSockets() error {
	prog, err := unixSocketFilter(unixSocketArches())
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// seccomp(2), not prctl: without SECCOMP_FILTER_FLAG_TSYNC it applies
	// to this thread only, like Landlock here; the thread execs or forks
	// every command.
	_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return e
	}
	return nil
}
