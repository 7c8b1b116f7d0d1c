package main

import (
	"bufio"
	"bytes"
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

// tail keeps the end of a worker's stderr for an error message.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
