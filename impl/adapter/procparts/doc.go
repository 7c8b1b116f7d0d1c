// Package procparts checks HLCs and order projectors written in other
// languages: it starts a command and speaks the JSON-lines protocols of
// PROTOCOL.md over the command's stdin and stdout, one request and one
// answer per line — the "hlc" protocol (open, tick, burst, merge, close)
// for a hybrid logical clock and the "projector" protocol (open, apply,
// state, close) for a projector. They sit beside the store protocol of
// impl/adapter/procstore and share its robustness.
//
// One process serves a whole campaign: every clock and projector the
// harness opens is a handle in it, so a scenario costs round trips, not a
// process start. The first request of a process is "hello", which names the
// protocol and its version; an implementation that speaks another (a store
// adapter given as an HLC, say) is reported at Open.
//
// Determinism: an HLC reads no clock of its own. Every request carries the
// node's physical time ("physMs", from the skewed wall clock the harness
// gives the node), so skew and clock steps reach the implementation and the
// same scenario gives the same trace.
//
// Failures of the process never hang the harness: every request has a
// timeout (DefaultTimeout unless Options.Timeout says otherwise), and an
// implementation that hangs, dies or answers garbage is killed and reported
// as an *Error naming the command, the request and what happened, with the
// tail of its stderr. The clock or projector that asked reports it through
// Err (hlc.Failer, projector.Failer), which ends the run as an error of the
// harness, never as a broken law; the process is unusable afterwards and
// every later call fails at once with the same error. A refusal of a merge
// (kind "refused") is an answer, not a failure: the clock's Merge returns an
// error wrapping hlc.ErrRefused.
//
// Crashes: projection scenarios crash no node, so the harness never kills
// the process on purpose; clocks and projectors live in its memory and need
// no state file.
package procparts
