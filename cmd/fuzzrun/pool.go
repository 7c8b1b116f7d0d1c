package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// event is what the pool reports: a worker's message, or its exit.
type event struct {
	msg  *message
	exit *workerExit
}

// workerExit is a worker process ending; err is nil for a clean exit.
type workerExit struct {
	worker int
	err    error
	stderr string
}

// pool is the set of worker processes of one run. Each worker's stdout is
// read by one goroutine, which sends every message, then the exit, on one
// channel: the run's main loop is the only reader, and owns all the state.
type pool struct {
	events chan event
	cmds   []*exec.Cmd
	live   int
}

// startPool starts o.workers workers; checks gives worker w's check budget.
func startPool(o *options, checks func(w int) int64, left time.Duration) (*pool, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable to start workers: %w", err)
	}
	p := &pool{events: make(chan event)}
	for w := range o.workers {
		cmd := workerCommand(exe, o, w, checks(w), left)
		out, err := cmd.StdoutPipe()
		if err != nil {
			p.kill()
			return nil, err
		}
		stderr := &bytes.Buffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			p.kill()
			return nil, fmt.Errorf("start worker %d: %w", w, err)
		}
		p.cmds = append(p.cmds, cmd)
		p.live++
		go p.read(w, cmd, out, stderr)
	}
	return p, nil
}

// read forwards worker w's messages, then its exit. A line that is not a
// message (nothing else should write to a worker's stdout) is passed on as
// noise for the parent to show.
func (p *pool) read(w int, cmd *exec.Cmd, out io.Reader, stderr *bytes.Buffer) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Type == "" {
			m = message{Type: "noise", Worker: w, Message: sc.Text()}
		}
		p.events <- event{msg: &m}
	}
	err := cmd.Wait() // after the pipe is drained, as Wait requires
	if err == nil && sc.Err() != nil {
		err = sc.Err()
	}
	p.events <- event{exit: &workerExit{worker: w, err: err, stderr: tail(stderr.String(), 4000)}}
}

// kill ends every worker at once. A worker's unsent progress is lost, but
// nothing else: workers write no files.
func (p *pool) kill() {
	for _, c := range p.cmds {
		if c.Process != nil {
			_ = c.Process.Kill()
		}
	}
}

// stopGrace is how long workers may run past the time budget to finish the
// hunt (and shrink) in hand before they are killed.
const stopGrace = 30 * time.Second

// parent is the state a run of worker processes (a campaign, a mutation
// benchmark) keeps in the parent process, whatever the workers hunt. Only
// the run's main loop touches it.
type parent struct {
	o           *options
	pr          *progress
	start       time.Time
	elapsed     time.Duration
	errors      []string
	interrupted bool
	// overran: the workers outlived the time budget by stopGrace.
	overran bool
}

// runPool starts the workers, each with its check budget checks(w) and
// the time budget limit (0: none), and handles their messages until every
// worker has exited: handle takes what they report, line is the progress
// line. A signal (ctx) kills the workers, as does the end of stopGrace
// past limit. It fails only when the workers cannot start.
func (p *parent) runPool(ctx context.Context, checks func(w int) int64, limit time.Duration, handle func(*message), line func(live int) string) error {
	pool, err := startPool(p.o, checks, limit)
	if err != nil {
		return err
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var hardStop <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit + stopGrace)
		defer t.Stop()
		hardStop = t.C
	}
	done := ctx.Done()
	for pool.live > 0 {
		select {
		case ev := <-pool.events:
			switch x, m := ev.exit, ev.msg; {
			case x != nil:
				pool.live--
				if x.err != nil && !p.interrupted && !p.overran {
					p.errors = append(p.errors, fmt.Sprintf("worker %d failed: %v\n%s", x.worker, x.err, x.stderr))
				}
			case m.Type == "noise":
				p.pr.println("fuzzrun: worker %d: %s", m.Worker, m.Message)
			default:
				handle(m)
			}
		case now := <-tick.C:
			p.pr.update(now, line(pool.live))
		case <-done:
			done = nil
			p.interrupted = true
			p.pr.println("fuzzrun: interrupted; stopping the workers and writing the report so far")
			pool.kill()
		case <-hardStop:
			hardStop = nil
			p.overran = true
			pool.kill()
		}
	}
	p.pr.clear()
	p.elapsed = time.Since(p.start)
	return nil
}

// emit prints the run's report, js as JSON with -json, else text, then
// the errors on stderr, and returns code (exitInternal when the JSON
// cannot be written).
func (p *parent) emit(stdout, stderr io.Writer, code int, js func() any, text func(io.Writer)) int {
	if p.o.json {
		if err := writeJSON(stdout, js()); err != nil {
			return say(stderr, exitInternal, "%v", err)
		}
	} else {
		text(stdout)
	}
	for _, e := range p.errors {
		fmt.Fprintf(stderr, "fuzzrun: error: %s\n", e)
	}
	return code
}

// markNew marks new each finding whose corpus file this run added,
// whichever finding wrote it first.
func markNew(found []*finding) {
	added := map[string]bool{}
	for _, f := range found {
		added[f.file] = added[f.file] || f.created
	}
	for _, f := range found {
		f.created = f.file != "" && added[f.file]
	}
}

// tail keeps the end of a worker's stderr for an error message.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
