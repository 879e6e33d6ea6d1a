// Package cgroup holds the cgroup v2 plumbing that acpterm uses to contain
// the processes it starts on Linux: the agent (acp.StartAgent with
// ConnOptions.Contain) and each terminal (terminal.Manager with
// IsolationCgroup). On other systems it is empty.
//
// # Placement and naming
//
// A cgroup is made under a parent directory, by default the calling
// process's own cgroup (/proc/self/cgroup resolved against the cgroup2
// mount), and named
//
//	acpterm-PID-START-KIND-RANDOM
//
// where PID is the owner's process ID, START its start time in clock ticks
// after boot (field 22 of /proc/PID/stat), KIND what it holds ("agent",
// "terms") and RANDOM eight hex digits: package owner's naming, which
// acpterm's temporary directories share. The owner removes its cgroups when
// it shuts down in order.
//
// # Stale cgroups
//
// An owner that was killed (SIGKILL, OOM) leaves its cgroups behind, and in
// them whatever its children started that outlived it: PR_SET_PDEATHSIG
// takes down direct children only, not a grandchild that called setsid.
// So New first looks through the parent for cgroups named as above whose
// owner is dead — no /proc/PID, a zombie, or a process with that PID but
// another start time (the PID was reused) — kills their members with
// cgroup.kill and removes them. A name without START (acpterm-PID-RANDOM,
// written by older versions) is stale when no process has that PID.
// Anything else under the parent is left alone.
//
// The members do not wait for that next start: the first New under a
// parent also starts a watchdog (a /bin/sh in a process group of its own,
// outside the cgroups) whose stdin only the owner holds open; when the
// owner is gone, however it ended, the watchdog kills the owner's cgroups
// under that parent with cgroup.kill. Their removal is left to the next
// New.
//
// The rule assumes that everyone making such cgroups under one parent
// shares a PID namespace, which holds when the parent is the process's
// own cgroup: containers get cgroups of their own.
//
// # Needs
//
// A writable cgroup v2 tree (root, or a delegated subtree such as a
// systemd user service with Delegate=yes) and Linux 5.14 for cgroup.kill;
// New fails otherwise and callers fall back to process groups. Starting a
// process directly inside a cgroup (Start) uses clone3 with
// CLONE_INTO_CGROUP (Linux 5.7), so not even its first fork can escape.
package cgroup
