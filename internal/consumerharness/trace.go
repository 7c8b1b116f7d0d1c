package consumerharness

import (
	"fmt"
	"strings"
	"sync"
)

// Trace is the numbered, human account of a run: a line per thing that
// happened (which worker made which call, what crashed, when time moved,
// what the broker did). Lines are formatted only when somebody reads them.
type Trace struct {
	// mu lets a watcher outside the run copy the trace of a run it gives
	// up (see guard).
	mu      sync.Mutex
	entries []traceEntry
	// steps counts the steps of the schedule played so far; over is set
	// once the schedule is over (the first phase line). See Entry.Step.
	steps int
	over  bool
	// results are what the calls returned, by Call.Seq, each shown on
	// one line (see results.go).
	results map[uint64]*callResult
}

type traceEntry struct {
	format string
	args   []any
	// meta is the line as data (see Entries), without its text.
	meta Entry
	// res, when set, is what the line's call returned: it ends the line.
	res *callResult
	// effect says the line's call writes the consumer's effects; inTx
	// that it runs inside a transaction (see Entry.Effect).
	effect, inTx bool
}

// text formats the line. t.mu is held.
func (e traceEntry) text() string {
	s := fmt.Sprintf(e.format, e.args...)
	if e.res != nil {
		s += e.res.String()
	}
	return s
}

// add appends a line with its data (a run's lines go through
// run.tracef, which fills it in); args must not change afterwards.
func (t *Trace) add(meta Entry, format string, args ...any) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		// A run writes dozens of lines: room for them at once rather than
		// a copy at every doubling from one.
		t.entries = make([]traceEntry, 0, firstLines)
	}
	t.entries = append(t.entries, traceEntry{format: format, args: args, meta: meta})
	return len(t.entries)
}

// firstLines is the room a trace makes for its lines when it writes its
// first.
const firstLines = 32

// clone copies the trace.
func (t *Trace) clone() *Trace {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := &Trace{entries: append([]traceEntry(nil), t.entries...), steps: t.steps, over: t.over}
	// The copy's results are its own: a call of the run still going
	// adds to the run's, not to the copy's.
	copies := map[*callResult]*callResult{}
	for i, e := range out.entries {
		if e.res != nil {
			c := *e.res
			c.rows = append([]string(nil), e.res.rows...)
			copies[e.res] = &c
			out.entries[i].res = &c
		}
	}
	if len(t.results) > 0 {
		out.results = map[uint64]*callResult{}
		for seq, cr := range t.results {
			if c := copies[cr]; c != nil {
				out.results[seq] = c
			}
		}
	}
	return out
}

// Len is the number of lines.
func (t *Trace) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Lines returns every line, formatted, without numbers.
func (t *Trace) Lines() []string {
	if t == nil {
		return nil
	}
	n := t.Len()
	out := make([]string, n)
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, e := range t.entries[:n] {
		out[i] = e.text()
	}
	return out
}

// String renders the trace, a numbered line each.
func (t *Trace) String() string {
	var b strings.Builder
	for i, l := range t.Lines() {
		fmt.Fprintf(&b, "%4d. %s\n", i+1, l)
	}
	return b.String()
}
