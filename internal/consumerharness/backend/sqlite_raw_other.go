//go:build !linux

package backend

import (
	"errors"
	"os"
)

// rawLocks says the harness may check SQLite's locks itself: not here
// (no open-file-description locks), where it asks the engine.
const rawLocks = false

var errNoRawLocks = errors.New("sqlite: no open-file-description locks here")

func lockAll(int) (bool, error)      { return false, errNoRawLocks }
func unlockAll(int) error            { return errNoRawLocks }
func readable(int) (bool, error)     { return false, errNoRawLocks }
func pread(int, []byte) (int, error) { return 0, errNoRawLocks }

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
