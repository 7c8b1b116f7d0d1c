// Package machineclock reads the machine's clock where time.Now may not:
// inside a testing/synctest bubble time.Now is the bubble's fake clock, which
// the scenarios move by hours, so a duration measured with it is the
// scenarios' time, not how long the harness took. The harness measures its
// own durations (a hunt's elapsed time, its time to the first failure, a
// budget) with Now, which asks the operating system.
package machineclock

import "time"

// Now is the machine's wall clock, inside a synctest bubble or not.
func Now() time.Time { return now() }

// Since is the machine time elapsed since t, a reading of Now.
func Since(t time.Time) time.Duration { return Now().Sub(t) }
