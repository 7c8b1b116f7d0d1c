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
// Crashes: the harness stops the worker and closes the Worker's Closer,
// which kills the process (its whole process group); the harness closes the
// worker's connection, so an open transaction rolls back, and restarts the
// worker by calling the Worker again, which starts a fresh process.
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
// campaign.
package consumerproc
