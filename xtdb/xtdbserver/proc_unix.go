//go:build unix

package xtdbserver

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the JVM in its own process group (so signals to the test's
// group don't reach it and Stop can signal the whole group) and, on Linux, asks
// the kernel to SIGKILL it when the Go process dies (no orphan JVMs).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(cmd.SysProcAttr)
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}

func terminate(cmd *exec.Cmd) error { return signalGroup(cmd.Process.Pid, syscall.SIGTERM) }

func kill(cmd *exec.Cmd) error { return signalGroup(cmd.Process.Pid, syscall.SIGKILL) }
