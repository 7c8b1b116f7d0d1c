//go:build unix

package backend

import (
	"errors"
	"io/fs"
	"syscall"
)

// processAlive reports whether a process pid exists (signal 0 checks
// without signalling; EPERM: it exists, another user's).
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// unlink removes a file: one system call, where os.Remove tries rmdir too
// when unlink fails (most of the engine's files beside a database do not
// exist).
func unlink(path string) error {
	if err := syscall.Unlink(path); err != nil {
		return &fs.PathError{Op: "unlink", Path: path, Err: err}
	}
	return nil
}
