//go:build unix

package lineproc

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the adapter in a process group of its own, so that a kill
// reaches whatever it started too (a shell's children, a runtime's helpers):
// none of them may keep the pipes open after the adapter is gone.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the adapter's whole process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
