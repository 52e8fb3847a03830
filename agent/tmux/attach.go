package tmux

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Attach starts a tmux client on session in a new terminal of cols by
// rows, read-only unless write (hostd attach), with the server's
// arguments and UTF-8 locale as every command here and
// TERM=xterm-256color. It returns the started client and the terminal's
// master side, from which its output is read and to which its keys are
// written (SetSize resizes it). The client is bound to no context: the
// caller ends it (SIGHUP, then a kill) and waits for it.
func (t Server) Attach(session string, write bool, cols, rows uint16) (*exec.Cmd, *os.File, error) {
	master, slave, err := openPTY()
	if err != nil {
		return nil, nil, err
	}
	defer slave.Close()
	if err := SetSize(master, cols, rows); err != nil {
		master.Close()
		return nil, nil, err
	}
	args := []string{"attach-session"}
	if !write {
		args = append(args, "-r")
	}
	cmd := t.command(context.Background(), append(args, "-t", "="+session)...)
	cmd.Env = append(cmd.Env, "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("starting tmux attach: %w", err)
	}
	return cmd, master, nil
}

// SetSize sets the size of a terminal from Attach; its tmux client hears
// SIGWINCH.
func SetSize(master *os.File, cols, rows uint16) error {
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		return fmt.Errorf("sizing the terminal: %w", err)
	}
	return nil
}

// openPTY opens a new pseudo-terminal: its master, and its slave for the
// child.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening a terminal for attach: %w", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlocking the terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("naming the terminal: %w", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("opening the terminal's other end: %w", err)
	}
	return master, slave, nil
}
