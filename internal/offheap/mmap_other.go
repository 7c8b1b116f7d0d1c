//go:build !unix

package offheap

import "errors"

// errNoMapping sends New to the Go heap where there is no mmap.
var errNoMapping = errors.New("offheap: no memory mapping on this system")

func mmap(int) ([]byte, error) { return nil, errNoMapping }

func munmap([]byte) error { return nil }
