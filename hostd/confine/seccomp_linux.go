//go:build linux

package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's TCP rules (ABI 4) see TCP sockets only: a socket of Multipath
// TCP (IPPROTO_MPTCP, which Go's own listeners use by default) binds and
// connects wherever it likes (seen on Linux 6.18). A seccomp filter on the
// confined thread, which its children inherit, refuses making one, and
// every system call of another ABI on the same machine (x86_64's 32-bit
// and x32 calls would reach socket(2) by another number).

// auditArch is this architecture's AUDIT_ARCH, 0 where hostd has none in
// mind (no filter there).
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]

// x32Bit marks x86_64's x32 system calls.
const x32Bit = 0x40000000

// mptcpFilter is the seccomp program: EPERM for socket(2) with protocol
// IPPROTO_MPTCP and for any call of a foreign ABI, everything else
// allowed. seccomp_data: nr at 0, arch at 4, args at 16 (the low word of
// the third argument, little-endian, at 32).
func mptcpFilter() []unix.SockFilter {
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	return []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4},                                 // 0: arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, Jf: 0, K: auditArch},          // 1: ours: 3
		{Code: unix.BPF_RET | unix.BPF_K, K: deny},                                            // 2: a foreign ABI
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},                                 // 3: nr
		{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, Jt: 4, Jf: 0, K: x32Bit},             // 4: x32: 9
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 2, K: unix.SYS_SOCKET},    // 5: not socket: 8
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 32},                                // 6: protocol
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, Jf: 0, K: unix.IPPROTO_MPTCP}, // 7: MPTCP: 9
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},                          // 8
		{Code: unix.BPF_RET | unix.BPF_K, K: deny},                                            // 9
	}
}

// denyMPTCP installs mptcpFilter on the calling thread (which must have
// no_new_privs set); nothing where auditArch is unknown.
func denyMPTCP() error {
	if auditArch == 0 {
		return nil
	}
	f := mptcpFilter()
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("confine: installing the seccomp filter against MPTCP sockets: %w", err)
	}
	return nil
}
