//go:build !unix

package backend

// processAlive cannot tell here: every file is taken to be a live
// process's, and none is swept.
func processAlive(int) bool { return true }
