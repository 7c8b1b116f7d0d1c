// Package procstore checks store implementations written in other
// languages: it is a store.Store that starts a command and speaks the
// JSON-lines protocol of PROTOCOL.md over the command's stdin and stdout,
// one request and one answer per line.
//
// Determinism: every request carries the store's time ("nowMs", from the
// clock the harness gives the store), so an implementation reads no clock of
// its own and the same scenario gives the same trace.
//
// Crashes: the implementation keeps its durable state in the file named by
// IDEMCHECK_STATE_FILE. When the runner crashes a worker holding a unit of
// work, the unit's Crash kills the process (its whole process group) and the
// next request starts it again over the same file: a crash is the store
// process dying, as a SQL worker's crash is its connection dying. All the
// workers of a run share the one process, so units of work other workers
// had open die with it; their commits fail with an error and they retry,
// and the invariants must still hold.
//
// Failures of the process itself never hang the harness: every request has
// a timeout (DefaultTimeout unless Options.Timeout says otherwise), and an
// adapter that hangs, dies or answers garbage (not JSON, a wrong id, a
// missing field) is killed and reported as an *Error naming the command,
// the request and what happened, with the tail of its stderr. The store is
// unusable afterwards: every later call fails at once with the same error.
package procstore
