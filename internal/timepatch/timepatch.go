// Package timepatch replaces time.Now in the running process, as a monkey
// patch (gomonkey's ApplyFunc, bou.ke/monkey) does: the first instructions
// of time.Now are overwritten with a jump to another function. The harness
// never does this; its tests do, to show that a patch left in place
// elsewhere in a process is detected and named rather than failing every
// scenario without a hint.
package timepatch

import (
	"errors"
	"time"
)

// ErrUnsupported is returned where this package cannot patch.
var ErrUnsupported = errors.New("timepatch: patching time.Now is supported on linux/amd64 only")

// Now replaces time.Now with now until the returned restore is called. No
// other goroutine may call time.Now while either runs.
func Now(now func() time.Time) (restore func(), err error) { return patch(now) }
