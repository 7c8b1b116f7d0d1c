package hunt

import (
	"flag"
	"fmt"
	"strings"
)

// setFlags sets the named flags (rapid's -rapid.checks, -rapid.seed, ...)
// and returns a function that puts the old values back. Flags that are not
// registered are left alone. Only WithFlags calls it, under the guard.
func setFlags(values map[string]string) (restore func()) {
	old := map[string]string{}
	for name, v := range values {
		f := flag.Lookup(name)
		if f == nil {
			continue
		}
		old[name] = f.Value.String()
		_ = f.Value.Set(v)
	}
	return func() {
		for name, v := range old {
			_ = flag.Lookup(name).Value.Set(v)
		}
	}
}

// Recorder is a rapid.TB that records a failure instead of failing a test.
// Its zero value is ready to use; NewRecorder names it.
type Recorder struct {
	name    string
	failed  bool
	skipped bool
	msgs    []string
}

// NewRecorder returns a Recorder whose Name is name.
func NewRecorder(name string) *Recorder { return &Recorder{name: name} }

// Helper does nothing: there is no test output to attribute.
func (r *Recorder) Helper() {}

// Name returns the name given to NewRecorder.
func (r *Recorder) Name() string { return r.name }

// Logf drops the log line: only failures are kept.
func (r *Recorder) Logf(string, ...any) {}

// Log drops the log line: only failures are kept.
func (r *Recorder) Log(...any) {}

// Skipf records a skip.
func (r *Recorder) Skipf(string, ...any) { r.skipped = true }

// Skip records a skip.
func (r *Recorder) Skip(...any) { r.skipped = true }

// SkipNow records a skip.
func (r *Recorder) SkipNow() { r.skipped = true }

// Errorf records a failure with its message.
func (r *Recorder) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }

// Error records a failure with its message.
func (r *Recorder) Error(args ...any) { r.fail(fmt.Sprint(args...)) }

// Fatalf records a failure with its message.
func (r *Recorder) Fatalf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }

// Fatal records a failure with its message.
func (r *Recorder) Fatal(args ...any) { r.fail(fmt.Sprint(args...)) }

// FailNow records a failure.
func (r *Recorder) FailNow() { r.failed = true }

// Fail records a failure.
func (r *Recorder) Fail() { r.failed = true }

// Failed reports whether a failure was recorded.
func (r *Recorder) Failed() bool { return r.failed }

// Skipped reports whether a skip was recorded.
func (r *Recorder) Skipped() bool { return r.skipped }

// Message joins the recorded failure messages, one per line.
func (r *Recorder) Message() string { return strings.Join(r.msgs, "\n") }

func (r *Recorder) fail(msg string) {
	r.failed = true
	r.msgs = append(r.msgs, msg)
}
