// Package lineproc runs an adapter process that answers one JSON line per
// request line on its stdin and stdout, as the process protocols of
// impl/adapter/procstore, procparts and consumerproc require: starting it
// in a process group of its own, one round trip within a timeout, and
// telling a hang, a death (with the tail of its stderr) and garbage apart;
// and it holds what their lines share: one-line JSON, the command line's
// split, and the envelope of a numbered answer.
package lineproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrHung is wrapped by the error of a round trip the process did not
// answer (or whose line it did not read) within its timeout: it was
// killed as hung. Its text is "hung".
var ErrHung = errors.New("hung")

// maxLine bounds one answer line. A ledger of a long run is far smaller; a
// line longer than this is garbage (or an adapter that never ends a line).
const maxLine = 64 << 20

// exitGrace is how long an answer may still arrive after the process has
// exited, before its death is reported.
const exitGrace = 200 * time.Millisecond

// Proc is one running adapter process and the pipes to it.
type Proc struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	lines  chan []byte // answer lines; closed at EOF or on a read error
	readEr error       // why lines closed; read after lines is closed
	exited chan struct{}
	waitEr error // the exit status; read after exited is closed
	stderr *tail
	// killed releases the reader when nobody will read lines any more.
	killed   chan struct{}
	killOnce sync.Once
	// gone is closed exitGrace after the process exited: an answer it
	// wrote before exiting has been read by then.
	gone chan struct{}
	// The watchdog of Exchange (see Watch).
	watched bool
	hung    chan struct{} // closed when a round trip outlived its timeout
	tick    time.Duration
	trip    atomic.Int64 // numbers the round trips
	limit   atomic.Int64 // ticks the current round trip may take; 0: none in flight
}

// Start launches argv in dir with env. Stdin and stdout are plain pipes (not
// exec's copying goroutines) so that writes take a deadline and reading
// needs no cooperation from Wait.
func Start(argv []string, dir string, env []string) (*Proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout = inR, outW
	p := &Proc{cmd: cmd, stdin: inW, stdout: outR, lines: make(chan []byte, 1), exited: make(chan struct{}), stderr: &tail{max: 4096},
		killed: make(chan struct{}), gone: make(chan struct{}), hung: make(chan struct{})}
	cmd.Stderr = p.stderr
	// Wait must not wait for ever on a stderr kept open by a grandchild.
	cmd.WaitDelay = time.Second
	ownGroup(cmd)
	err = cmd.Start()
	// The child holds its ends now; ours must close so EOF reaches us.
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	go p.read()
	go func() {
		p.waitEr = cmd.Wait()
		close(p.exited)
		time.AfterFunc(exitGrace, func() { close(p.gone) })
	}()
	return p, nil
}

// Watch starts the watchdog that Exchange needs, checking every tick; call
// it once, right after Start and from the same goroutine, outside any
// testing/synctest bubble. A round trip of Exchange is given up (the
// process killed) between its timeout and its timeout plus a tick after it
// began. The watchdog ends with the process.
func (p *Proc) Watch(tick time.Duration) {
	p.watched = true
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		var seen, ticks int64
		for {
			select {
			case <-p.exited:
				return
			case <-p.killed:
				return
			case <-t.C:
			}
			trip, limit := p.trip.Load(), p.limit.Load()
			if limit == 0 || trip != seen {
				seen, ticks = trip, 0
				continue
			}
			if ticks++; ticks >= limit {
				close(p.hung)
				p.Kill()
				return
			}
		}
	}()
	p.tick = tick
}

// Exchange is RoundTrip for a caller that may run inside a
// testing/synctest bubble, where a timer or a deadline would follow the
// bubble's clock: it writes the line and waits for the answer with no
// timer of its own, the watchdog (see Watch) ending a round trip that
// outlives timeout by killing the process. It also costs no goroutine: one
// wake-up per answer. Any failure is final for this process.
func (p *Proc) Exchange(ctx context.Context, line []byte, timeout time.Duration) ([]byte, error) {
	if !p.watched {
		panic("lineproc: Exchange on a process that is not watched")
	}
	p.trip.Add(1)
	p.limit.Store(max(int64((timeout+p.tick-1)/p.tick), 1))
	defer p.limit.Store(0)
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		if p.isHung() {
			return nil, fmt.Errorf("did not read its stdin within %v (%w)", timeout, ErrHung)
		}
		return nil, p.gave(err, timeout)
	}
	select {
	case l, ok := <-p.lines:
		if !ok {
			return nil, p.gave(p.readEr, timeout)
		}
		return l, nil
	case <-p.gone:
		select {
		case l, ok := <-p.lines:
			if ok {
				return l, nil
			}
		default:
		}
		return nil, p.gave(nil, timeout)
	case <-p.hung:
		return nil, fmt.Errorf("no answer within %v (%w)", timeout, ErrHung)
	case <-ctx.Done():
		return nil, fmt.Errorf("gave up waiting for the answer: %w", ctx.Err())
	}
}

func (p *Proc) isHung() bool {
	select {
	case <-p.hung:
		return true
	default:
		return false
	}
}

// gave describes why an Exchange ended without an answer: the process died
// (cause is the pipe error, if any), or the watchdog gave up on it.
func (p *Proc) gave(cause error, timeout time.Duration) error {
	select {
	case <-p.gone:
	case <-p.hung:
		return fmt.Errorf("no answer within %v (%w)", timeout, ErrHung)
	}
	msg := "died: " + p.Status()
	if cause != nil && !errors.Is(cause, io.EOF) && !errors.Is(cause, os.ErrClosed) {
		msg += " (" + cause.Error() + ")"
	}
	return DeathError(msg)
}

func (p *Proc) read() {
	defer close(p.lines)
	br := bufio.NewReaderSize(p.stdout, 64<<10)
	for {
		line, err := readLine(br)
		if err != nil {
			p.readEr = err
			return
		}
		select {
		case p.lines <- line:
		case <-p.killed:
			return // lines nobody asked for, from a process being killed
		}
	}
}

// readLine reads one line without its newline, refusing lines over maxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(buf) > maxLine {
				return nil, fmt.Errorf("an answer line longer than %d bytes", maxLine)
			}
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return nil, fmt.Errorf("output ended in the middle of a line: %q", Clip(buf))
		default:
			return nil, err
		}
	}
}

// Kill ends the process and everything it started, and waits (bounded) for
// it to be reaped.
func (p *Proc) Kill() {
	p.killOnce.Do(func() { close(p.killed) })
	killGroup(p.cmd)
	p.stdin.Close()
	// Unblocks the reader even if something outside the process group
	// still holds the pipe open.
	p.stdout.Close()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
}

// Status describes how the process ended, with the tail of its stderr.
func (p *Proc) Status() string {
	s := "closed its stdout"
	select {
	case <-p.exited:
		var ee *exec.ExitError
		switch {
		case p.waitEr == nil:
			s = "exited with status 0"
		case errors.As(p.waitEr, &ee) && ee.Exited():
			s = fmt.Sprintf("exited with status %d", ee.ExitCode())
		case errors.As(p.waitEr, &ee):
			s = "ended by " + ee.ProcessState.String()
		default:
			s = "ended: " + p.waitEr.Error()
		}
	default:
	}
	if e := p.stderr.String(); e != "" {
		s += "; its stderr ends with: " + e
	}
	return s
}

// RoundTrip writes one request line and reads one answer line within
// timeout. Any failure is final for this process: the caller kills it.
func (p *Proc) RoundTrip(ctx context.Context, line []byte, timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// A process that stops reading its stdin fills the pipe; the deadline
	// turns the blocked write into an error.
	_ = p.stdin.SetWriteDeadline(deadline)
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("did not read its stdin within %v (%w)", timeout, ErrHung)
		}
		return nil, p.died(err)
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return nil, p.died(p.readEr)
			}
			return l, nil
		case <-p.exited:
			// The answer may be in the pipe still: give it a moment.
			select {
			case l, ok := <-p.lines:
				if ok {
					return l, nil
				}
				return nil, p.died(p.readEr)
			case <-time.After(exitGrace):
				return nil, p.died(nil)
			}
		case <-timer.C:
			return nil, fmt.Errorf("no answer within %v (%w)", timeout, ErrHung)
		case <-ctx.Done():
			return nil, fmt.Errorf("gave up waiting for the answer: %w", ctx.Err())
		}
	}
}

// died describes the process's death; cause is the pipe error, if any.
func (p *Proc) died(cause error) error {
	select {
	case <-p.exited:
	case <-time.After(exitGrace):
	}
	msg := "died: " + p.Status()
	if cause != nil && !errors.Is(cause, io.EOF) && !errors.Is(cause, os.ErrClosed) {
		msg += " (" + cause.Error() + ")"
	}
	return DeathError(msg)
}

// DeathError is the process's death; its message has the stderr tail.
type DeathError string

func (e DeathError) Error() string { return string(e) }

// tail keeps the last max bytes written to it: the end of an adapter's
// stderr, where the reason it died usually is.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// Clip shortens a garbage line for an error message.
func Clip(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// ValidJSONObject reports whether line is one JSON object.
func ValidJSONObject(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// Stderr returns the end of what the process wrote to its stderr.
func (p *Proc) Stderr() string { return p.stderr.String() }

// WithStderr adds the tail of the process's stderr to err, a failure of
// a round trip with it: a process that hangs or answers garbage often
// says why there. A DeathError has it already; a nil Proc adds nothing.
func (p *Proc) WithStderr(err error) error {
	var death DeathError
	if p == nil || errors.As(err, &death) {
		return err
	}
	if e := p.Stderr(); e != "" {
		return fmt.Errorf("%w; its stderr ends with: %s", err, e)
	}
	return err
}
