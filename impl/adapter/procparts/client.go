package procparts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/impl/adapter/internal/lineproc"
)

// Version is the version of the protocols this package speaks.
const Version = 1

// The protocols' names, as hello says them.
const (
	ProtocolHLC       = "hlc"
	ProtocolProjector = "projector"
)

// DefaultTimeout bounds each request unless Options.Timeout is set.
const DefaultTimeout = 5 * time.Second

// The operations (PROTOCOL.md).
const (
	OpHello = "hello"
	OpOpen  = "open"
	OpClose = "close"
	OpTick  = "tick"
	OpBurst = "burst"
	OpMerge = "merge"
	OpApply = "apply"
	OpState = "state"
)

// The error kinds an answer may carry.
const (
	// KindRefused is a merge's refusal of a stamp beyond the max offset.
	KindRefused = "refused"
	// KindBad is a request the implementation does not understand.
	KindBad = "bad_request"
)

// Options configure an implementation's process.
type Options struct {
	// Command is the argv; Command[0] is looked up in PATH.
	Command []string
	// Dir is the process's working directory; empty: the harness's.
	Dir string
	// Timeout bounds every request; zero means DefaultTimeout.
	Timeout time.Duration
	// Env is added to the harness's environment.
	Env []string
}

// ParseCommand splits a command line on white space: "node hlc.js" is argv
// ["node", "hlc.js"]. There is no quoting; wrap anything fancier in a
// script.
func ParseCommand(line string) ([]string, error) { return lineproc.Argv("procparts", line) }

// Error is a failure of the implementation's process itself, as opposed to
// an answer of the clock or projector it implements: it hung, died, spoke
// another protocol or answered garbage.
type Error struct {
	// Command is the command line.
	Command string
	// Protocol is "hlc" or "projector".
	Protocol string
	// Request and Op identify the request that went unanswered.
	Request int64
	Op      string
	// Reason says what happened.
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("procparts: %s implementation %q failed on request %d (%s): %s; the process was killed and is unusable",
		e.Protocol, e.Command, e.Request, e.Op, e.Reason)
}

// refusal is an error answer of the implementation: the process is fine.
type refusal struct {
	kind, msg string
}

func (r *refusal) Error() string { return fmt.Sprintf("%s (kind %q)", r.msg, r.kind) }

// conn is one implementation process and the requests sent to it, one at a
// time.
type conn struct {
	opts     Options
	command  string
	protocol string
	env      []string

	mu     sync.Mutex
	p      *lineproc.Proc
	nextID int64
	handle int64
	broken error // set for good by a failure or Close
}

// dial starts the process and checks, by hello, that it speaks protocol
// at this package's version.
func dial(ctx context.Context, opts Options, protocol string) (*conn, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("procparts: no command")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	c := &conn{opts: opts, command: strings.Join(opts.Command, " "), protocol: protocol,
		env: append(os.Environ(), opts.Env...)}
	var r response
	err := c.call(ctx, OpHello, map[string]any{"protocol": protocol, "version": Version}, &r, "")
	if err != nil {
		_ = c.close()
		return nil, err
	}
	switch {
	case r.Protocol != protocol:
		err = c.fail(c.nextID, OpHello, fmt.Sprintf("answered hello with protocol %q, want %q", r.Protocol, protocol))
	case r.Version != Version:
		err = c.fail(c.nextID, OpHello, fmt.Sprintf("speaks version %d of the %s protocol; this harness speaks version %d", r.Version, protocol, Version))
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newHandle returns a handle no clock or projector of this process had.
func (c *conn) newHandle() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handle++
	return c.handle
}

// call sends one request and decodes its answer into r. An error answer of
// kind allow comes back as a *refusal; any other error answer, and every
// failure of the process, as an *Error, after which the process is dead
// and every call fails with it.
func (c *conn) call(ctx context.Context, op string, fields map[string]any, r *response, allow string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return c.broken
	}
	if c.p == nil {
		p, err := lineproc.Start(c.opts.Command, c.opts.Dir, c.env)
		if err != nil {
			c.broken = &Error{Command: c.command, Protocol: c.protocol, Request: c.nextID + 1, Op: op, Reason: "could not start: " + err.Error()}
			return c.broken
		}
		c.p = p
	}
	c.nextID++
	id := c.nextID
	req := map[string]any{"id": id, "op": op}
	for k, v := range fields {
		req[k] = v
	}
	line, err := lineproc.Marshal(req)
	if err != nil {
		return c.failLocked(id, op, "could not encode the request: "+err.Error())
	}
	ans, err := c.p.RoundTrip(ctx, line, c.opts.Timeout)
	if err != nil {
		return c.failLocked(id, op, c.p.WithStderr(err).Error())
	}
	if err := decode(ans, id, op, fields, r); err != nil {
		return c.failLocked(id, op, c.p.WithStderr(err).Error())
	}
	switch {
	case r.Error == "":
		return nil
	case allow != "" && r.Kind == allow:
		return &refusal{kind: r.Kind, msg: r.Error}
	case op == OpHello:
		return c.failLocked(id, op, fmt.Sprintf("answered hello with an error (%s, kind %q): it does not speak version %d of the %s protocol (is it a store adapter, or the other protocol's?)",
			r.Error, r.Kind, Version, c.protocol))
	case allow != "":
		return c.failLocked(id, op, fmt.Sprintf("answered %s with an error of kind %q (%s); the only error it may answer is kind %q", op, r.Kind, r.Error, allow))
	}
	return c.failLocked(id, op, fmt.Sprintf("answered %s with an error (%s, kind %q); %s must not fail", op, r.Error, r.Kind, op))
}

// fail is failLocked for a caller that does not hold the lock.
func (c *conn) fail(id int64, op, reason string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failLocked(id, op, reason)
}

// failLocked kills the process and makes the connection unusable.
func (c *conn) failLocked(id int64, op, reason string) error {
	if c.p != nil {
		c.p.Kill()
		c.p = nil
	}
	if c.broken == nil {
		c.broken = &Error{Command: c.command, Protocol: c.protocol, Request: id, Op: op, Reason: reason}
	}
	return c.broken
}

// close ends the process: its stdin closes, so a well-behaved
// implementation exits; it is killed anyway.
func (c *conn) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil {
		c.p.Kill()
		c.p = nil
	}
	if c.broken == nil {
		c.broken = fmt.Errorf("procparts: %s implementation %q: closed", c.protocol, c.command)
	}
	return nil
}
