// Package consumerproc checks a team's consumer written in any language: it
// is a handler.Worker that starts the team's process and speaks the
// consumer-level JSON-lines protocol of PROTOCOL.md over its stdin and
// stdout.
//
// The harness hands the returned Func a delivery; the Func sends it to the
// process, which answers with requests, one at a time: each SQL statement it
// wants to run (and begin, commit, rollback), which the Func runs on the
// *sql.DB the harness gave it, so every statement is a scheduling and crash
// point exactly as a Go handler's are; and finally its outcome: ack, nack
// (a transient error) or poison.
//
// Processes are kept in a Pool (Worker makes one of its own; NewPool gives
// the caller Close, Warm, Declare and Stats). A runtime takes tens of
// milliseconds to start (seconds on a loaded machine), far more than a
// scenario's deliveries, and a scenario needs a process per worker and per
// crash, so:
//
//   - a process that declares reset in its hello (protocol version 2) is
//     reused: when its worker stops (a crash, or the end of a scenario),
//     its Closer gives it back as it is, waiting for its next line; the
//     next worker to start takes it and sends it a reset naming that
//     worker, which the process answers once it has forgotten everything
//     it kept. If its worker stopped in the middle of a delivery, the
//     reset stands in for the result the process awaited, and it abandons
//     that delivery. The pool starts a spare ahead in the background, so
//     that a worker it has no process for does not wait for a start;
//   - any other process is killed when its worker stops (its whole process
//     group), and the pool starts a spare in the background for the next
//     worker of the same name, once that name was asked for twice (the
//     name is in the process's environment and hello, so a spare serves
//     one name; the harness names a scenario's workers as the previous
//     scenario did).
//
// Either way the harness closes the worker's connection, so an open
// transaction rolls back, and the process a worker gets is, to the
// process, a fresh start: what it kept in memory is gone, as after a crash
// in production, and the same scenario gives the same trace as long as the
// process honours reset (a reused process that plays a scenario
// differently from a fresh one does not). A worker's Closer offers the
// harness fresh processes (handler.FreshWorkers): before it reports a
// counterexample played on reused processes, the harness plays it again
// on processes that served no other worker, and a counterexample they do
// not confirm is reported as a process that keeps state across reset,
// never as a broken law. The pool keeps at most
// Options.MaxIdle processes waiting, kills those idle for a few seconds,
// and kills all of them on Close.
//
// A delivery may run inside a testing/synctest bubble (consumertest.Check
// plays each scenario in one): processes, their pipes, their goroutines
// and the pool's timers are made outside any bubble, so that they outlive
// the bubble they were first used in and serve the next.
//
// Failures of the process itself never hang the harness: waiting for each
// of the process's lines has a timeout (DefaultTimeout unless
// Options.Timeout says otherwise), and a process that hangs, dies, answers
// garbage or speaks another protocol version is killed and reported as an
// *Error naming the command, the worker, the delivery and the request that
// went unanswered, with the tail of its stderr. Such a failure is not an
// outcome of the team's handler: the Func panics with the *Error (the
// harness reports the run as one that could not be judged) and every later
// call of the Worker returns an error wrapping it at once, which stops the
// campaign. A process that stops answering in the middle of a delivery is
// the exception: its handler hangs, as a Go handler may, and that is the
// handler's outcome. The Func panics with an *Error whose HandlerHung is
// true, which consumertest reports as a breach of law runs (handler-hangs)
// with the scenario, and later workers get processes of their own.
package consumerproc
