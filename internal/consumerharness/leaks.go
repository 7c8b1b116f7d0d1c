package consumerharness

import (
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
)

// What a run leaves behind: the goroutines a handler or a Worker factory
// started that still run once the scenario is over, found by the pprof
// labels the run gives them, and the stacks a report shows.

// leakBreach is the breach of law runs for n goroutines left running, the
// first started by origin with stack.
func leakBreach(n int, origin, stack string) Breach {
	return breach(LawRuns, "handler-goroutines", fmt.Sprintf("%d goroutine(s) are still running after the scenario ended and every worker was stopped (its Closer closed); the first was started by %s:\n%s\n"+
		"A goroutine that a library keeps for the life of the process may be declared: Consumer.Lingering says why.", n, origin, stack))
}

// sqlWatcher reports whether a goroutine is database/sql's own watcher of
// a context (it ends with its transaction or rows), not the handler's.
func sqlWatcher(entry string) bool {
	for _, line := range strings.Split(entry, "\n") {
		if strings.HasPrefix(line, "#\t0x") {
			fields := strings.Fields(line)
			return len(fields) >= 3 && strings.HasPrefix(fields[2], "database/sql.")
		}
	}
	return false
}

// leakSlack is how many more goroutines than at its start a run outside a
// bubble may end with before the goroutine profile is read.
const leakSlack = 8

// runLabel is the pprof label that marks the goroutines of one run, and
// originLabel the one that says who started them: a worker's handler, or
// the Worker factory of one of its incarnations.
const (
	runLabel    = "idemcheck-run"
	originLabel = "idemcheck-origin"
)

var runSeq atomic.Int64

// leaked counts the goroutines still labelled with run id, and returns
// the stack of the first. The goroutine profile is read only when the
// process has more goroutines than the harness's own.
func leaked(id string) (n int, origin, first string) {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return 0, "", ""
	}
	want := fmt.Sprintf("%q:%q", runLabel, id)
	for _, entry := range strings.Split(b.String(), "\n\n") {
		if !strings.Contains(entry, want) || sqlWatcher(entry) {
			continue
		}
		count := 1
		for _, line := range strings.Split(entry, "\n") {
			if c, _, ok := strings.Cut(line, " @ "); ok {
				if k, err := strconv.Atoi(c); err == nil {
					count = k
				}
				break
			}
		}
		n += count
		if first == "" {
			first = trimStack([]byte(entry))
			origin = labelValue(entry, originLabel)
		}
	}
	if origin == "" {
		origin = "the handler"
	}
	return n, origin, first
}

// labelValue reads a label of a goroutine profile's entry ("# labels:
// {"k":"v", ...}").
func labelValue(entry, key string) string {
	k := fmt.Sprintf("%q:", key)
	i := strings.Index(entry, k)
	if i < 0 {
		return ""
	}
	rest := entry[i+len(k):]
	if v, err := strconv.QuotedPrefix(rest); err == nil {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
	}
	return ""
}

// trimStack keeps the first lines of a panic's stack.
func trimStack(b []byte) string {
	lines := strings.Split(string(b), "\n")
	if len(lines) > 16 {
		lines = lines[:16]
	}
	return strings.Join(lines, "\n")
}
