//go:build !amd64 && !arm64

package goroutine

import "runtime"

// current reads the goroutine's id from the first line of its stack
// ("goroutine 18 [running]:").
func current() ID {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	const prefix = "goroutine "
	var id uintptr
	for _, c := range buf[len(prefix):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uintptr(c-'0')
	}
	return ID(id)
}
