package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress shows how a run is going on stderr: on a terminal, one live line
// rewritten in place; otherwise, a plain line every so often, so that logs
// (CI, a pipe) stay readable.
type progress struct {
	out   io.Writer
	tty   bool
	every time.Duration
	last  time.Time
	shown bool
}

func newProgress(out io.Writer, every time.Duration) *progress {
	return &progress{out: out, tty: isTerminal(out), every: every}
}

// isTerminal reports whether w is a character device (a terminal), without
// a dependency: a file, a pipe or a buffer is not.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// update shows the current state: at once on a terminal, at most every
// p.every otherwise.
func (p *progress) update(now time.Time, text string) {
	if p.tty {
		fmt.Fprintf(p.out, "\r\x1b[K%s", text)
		p.shown = true
		return
	}
	if now.Sub(p.last) >= p.every {
		fmt.Fprintln(p.out, text)
		p.last = now
	}
}

// println prints a line that stays, above the live line.
func (p *progress) println(format string, args ...any) {
	p.clear()
	fmt.Fprintf(p.out, format+"\n", args...)
}

// clear removes the live line before the final output.
func (p *progress) clear() {
	if p.tty && p.shown {
		fmt.Fprint(p.out, "\r\x1b[K")
		p.shown = false
	}
}
