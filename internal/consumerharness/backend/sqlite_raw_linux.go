//go:build linux

package backend

import (
	"errors"

	"golang.org/x/sys/unix"
)

// SQLite's lock bytes (os_unix.c): a reader holds a read lock on the
// SHARED range, a writer a write lock on the RESERVED byte, one about to
// write the file the PENDING byte and then the SHARED range for writing
// (EXCLUSIVE). The engine's unix VFS takes them as open-file-description
// (OFD) locks where Linux has them; an OFD lock of the harness's own file
// description conflicts with them, and with POSIX locks too.
const (
	pendingByte = 0x40000000
	sharedFirst = pendingByte + 2
	sharedSize  = 510
)

// rawLocks says the harness may check SQLite's locks itself.
const rawLocks = true

// lockAll takes a write lock on every lock byte of f (true), or reports
// that someone holds one of them (false).
func lockAll(fd int) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: pendingByte, Len: sharedFirst + sharedSize - pendingByte}
	err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return false, nil
	}
	return err == nil, err
}

// unlockAll gives back what lockAll took.
func unlockAll(fd int) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: pendingByte, Len: sharedFirst + sharedSize - pendingByte}
	return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
}

// readable reports whether a reader could take SQLite's SHARED lock now:
// nobody holds the PENDING byte nor the SHARED range for writing (a
// writer that holds only RESERVED lets readers in, as the engine does).
func readable(fd int) (bool, error) {
	for _, r := range [2][2]int64{{pendingByte, 1}, {sharedFirst, sharedSize}} {
		lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: r[0], Len: r[1]}
		if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk); err != nil {
			return false, err
		}
		if lk.Type != unix.F_UNLCK {
			return false, nil
		}
	}
	return true, nil
}

// fileExists reports whether path exists (one system call; an error other
// than its absence counts as there).
func fileExists(path string) bool {
	return !errors.Is(unix.Access(path, unix.F_OK), unix.ENOENT)
}

// pread reads the file fd from offset 0 into buf, up to its length.
func pread(fd int, buf []byte) (int, error) {
	return unix.Pread(fd, buf, 0)
}
