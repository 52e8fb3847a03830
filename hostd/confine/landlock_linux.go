//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock, through its three system calls (golang.org/x/sys/unix), not
// the go-landlock library, which confines every thread of the calling
// process: hostd confines one locked OS thread, never the main one, which
// starts the process (the child inherits its domain) and then ends with
// its goroutine. Why: docs/security.md, "Confining a command, not hostd".

// The file access rights per Landlock ABI version.
const (
	fsV1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	fsV2 = fsV1 | unix.LANDLOCK_ACCESS_FS_REFER
	fsV3 = fsV2 | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	fsV5 = fsV3 | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

	// fileRights are those that apply to a file; a rule on a file may
	// grant no other.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// rights is what a grants, in Landlock's terms.
func (a Access) rights() uint64 {
	var r uint64
	if a&Read != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	}
	if a&Exec != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_EXECUTE
	}
	if a&Write != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
			unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
			unix.LANDLOCK_ACCESS_FS_REFER
	}
	if a&List != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_READ_DIR
	}
	if a&Device != 0 {
		r |= unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

// rulesetAttr is struct landlock_ruleset_attr as of ABI 6, the fields
// hostd sets; the kernel takes the size it is given.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// ruleNetPort is LANDLOCK_RULE_NET_PORT (x/sys names only the path rule).
const ruleNetPort = 2

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

var probed = sync.OnceValue(func() Support {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == unix.ENOSYS:
		return Support{Reason: "the kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK)"}
	case errno == unix.EOPNOTSUPP:
		return Support{Reason: "Landlock is not enabled at boot (add landlock to the lsm= kernel parameter)"}
	case errno != 0:
		return Support{Reason: fmt.Sprintf("asking the kernel for Landlock: %v", errno)}
	}
	return Support{Mechanism: "landlock", Version: int(v)}
})

// Probe says whether this kernel has Landlock, and which ABI.
func Probe() Support { return probed() }

// handled is the access rights and scopes this kernel's ABI v enforces.
func handled(v int) rulesetAttr {
	a := rulesetAttr{handledFS: fsV1}
	switch {
	case v >= 5:
		a.handledFS = fsV5
	case v >= 3:
		a.handledFS = fsV3
	case v >= 2:
		a.handledFS = fsV2
	}
	if v >= 4 {
		a.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if v >= 6 {
		a.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	return a
}

func start(cmd *exec.Cmd, p Policy) error {
	s := Probe()
	if !s.Available() {
		return fmt.Errorf("%w: %s", ErrUnsupported, s.Reason)
	}
	attr := handled(s.Version)
	fd, err := ruleset(attr, p)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return <-startOnThread(cmd, fd)
}

// startOnThread starts cmd from a thread of its own, confined by the
// ruleset fd, and gives the result. The Go runtime ends a thread whose
// goroutine exits locked, but parks the main thread, which would keep
// hostd's thread-group leader in the command's domain: a goroutine that
// finds itself on the main thread holds it while the one it starts does
// the confining elsewhere (docs/security.md, "Confining a command, not hostd").
func startOnThread(cmd *exec.Cmd, fd int) <-chan error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			done <- <-startOnThread(cmd, fd)
			runtime.UnlockOSThread()
			return
		}
		// Never unlocked: the thread is confined, and ends with this
		// goroutine.
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- fmt.Errorf("confine: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
			return
		}
		if err := denyMPTCP(); err != nil {
			done <- err
			return
		}
		if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); errno != 0 {
			done <- fmt.Errorf("confine: landlock_restrict_self: %w", errno)
			return
		}
		done <- cmd.Start()
	}()
	return done
}

// ruleset makes a Landlock ruleset of p's rules, each limited to what
// attr handles; a rule whose path is missing is left out.
func ruleset(attr rulesetAttr, p Policy) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("confine: landlock_create_ruleset: %w", errno)
	}
	fd := int(r)
	for _, rule := range p.Rules {
		if err := addRule(fd, attr.handledFS, rule); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	if attr.handledNet != 0 {
		for _, port := range p.ConnectTCP {
			na := netPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
			if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), ruleNetPort,
				uintptr(unsafe.Pointer(&na)), 0, 0, 0); errno != 0 {
				unix.Close(fd)
				return -1, fmt.Errorf("confine: adding the rule for TCP port %d: %w", port, errno)
			}
		}
	}
	return fd, nil
}

// addRule adds one rule to the ruleset fd. A rule whose path is itself a
// symlink is left out: the kernel would give it to what the link points
// at, which whoever made the link chose (the link's directory may change
// between the caller's look and this open); its users give the real path.
func addRule(fd int, handledFS uint64, rule Rule) error {
	pfd, err := unix.Open(rule.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("confine: opening %s for its rule: %w", rule.Path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("confine: %s: %w", rule.Path, err)
	}
	allowed := rule.Access.rights() & handledFS
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil
	case unix.S_IFDIR:
	default:
		allowed &= fileRights
	}
	if allowed == 0 {
		return nil
	}
	pb := unix.LandlockPathBeneathAttr{Allowed_access: allowed, Parent_fd: int32(pfd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&pb)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("confine: adding the rule for %s (%s): %w", rule.Path, rule.Access, errno)
	}
	return nil
}

// System is what every program needs on Linux: the system's programs and
// libraries (read and run), its configuration, /proc and /sys (read; a
// confined process cannot reach another's /proc files beyond what
// Landlock's ptrace rule allows: none outside its domain) and the
// harmless devices.
func System() []Rule {
	rules := []Rule{{"/etc", Read}, {"/proc", Read}, {"/sys", Read}}
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		rules = append(rules, Rule{d, Read | Exec})
	}
	return append(rules, devices()...)
}
