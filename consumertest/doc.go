// Package consumertest puts a team's own event consumer under the harness,
// exactly as the team wrote it: its schema, its handler over a *sql.DB, and
// a query that reads what it did.
//
//	func TestLedgerConsumer(t *testing.T) {
//		consumertest.Check(t, consumertest.Consumer{
//			Schema:  ledger.Schema,
//			Handler: ledger.Handle,
//			Effects: consumertest.PerEvent("SELECT event_id, amount_cents FROM ledger"),
//			Dedupe:  "SELECT event_id FROM processed_events",
//		})
//	}
//
// Check draws scenarios with rapid, plays each one, and fails the test with
// the smallest counterexample it finds. A scenario (scenario.Scenario, plain
// data) is: OrderPaid events (some of them poison), one consumer group with
// one to three workers, the reference at-least-once broker
// (impl/reference/membroker: attempts counted on delivery, ack timeout,
// nack with backoff, max_attempts, a dead-letter queue with metadata), and
// an explicit schedule: which worker moves, which crashes, which call fails,
// when time moves, which message the broker duplicates, when it replays the
// stream. After the schedule the harness drains the system with a fixed
// round robin until it is quiet, judges it, replays the whole stream, drains
// again and judges again.
//
// # Scheduling points
//
// Each worker runs the handler on its own goroutine, but only one goroutine
// runs at a time: every database call (begin, exec, query, the end of a row
// iteration, commit, rollback), every Point (handler.Point) and the worker's ack or
// nack is a point where the worker parks and the schedule decides what
// happens next. The database hook is a wrapping database/sql driver
// (internal/consumerharness/sqlhook) around the real one, so the handler is unchanged.
//
// The Worker factory runs on the worker's own goroutine before its first
// delivery, given the worker's *sql.DB; its calls (a library creating its
// tables) are the worker's, run at once unless one meets a lock. A
// goroutine other than a handler's that makes calls through a worker's
// handle (a library's clean-up ticker, a goroutine the handler started) is
// an actor of its own, with a lane of its own in the trace (w1.bg1), run
// between the steps of the schedule once the bubble is settled (see
// actors.go). A goroutine still running once every worker was stopped is
// a breach of law runs, with its stack and who started it, unless
// Consumer.Lingering says why it lives on.
//
// # Contexts
//
// A handler's deadlines and cancellations are real. A deadline that
// passes while the worker waits at a call (because the schedule moved the
// scenario's time past it) makes the call return the context's error, as
// a driver does with a context that ended, and rolls the transaction back,
// as database/sql's watcher of the context does; both happen at once,
// where the schedule decides, not when the Go scheduler runs the watcher.
// The trace says so, and the delivery records it as a fault of the
// harness's. A transaction rolled back by cancelling its context is
// rolled back before the handler's return is judged, and each delivery's
// context ends when its handler returned or its worker crashed.
//
// # Crashes
//
// A crash stops the worker at its point: its connections are closed under
// any open transaction (the database rolls it back), its goroutine ends
// with runtime.Goexit so it never returns into the handler, its delivery is
// never acked (the broker redelivers it after the ack timeout), and the
// worker restarts idle (a Worker factory is called again, after the Closer
// of the crashed one was closed). Go runs the handler's deferred calls as
// the goroutine ends; they find the connections dead. One exception: at a
// query inside a transaction (or the end of its rows), database/sql holds a
// lock until the call returns, so there the call returns an error instead
// and every later call of the crashed handler fails until it returns; its
// answer is ignored. A handler that does something outside the database
// after a failed call (updating an in-memory cache on the error path, say)
// may do it after its crash.
//
// # Lock waits (SQLite)
//
// Each scenario gets a fresh SQLite database (modernc.org/sqlite): a real
// file on a RAM-backed directory (/dev/shm, else the system's temporary
// directory), named with the process's id and removed with its -journal,
// -wal and -shm files when the scenario ends. The engine locks it as it
// locks the team's database: in rollback-journal mode a reader gets in
// beside a transaction that holds the write lock and reads the committed
// state; in WAL a reader is never blocked. It runs with the settings the
// team declares with the option SQLite, the query parameters of its
// modernc.org/sqlite DSN (journal mode, busy timeout, _txlock, foreign
// keys, ...), on every connection, the workers' and the harness's. The
// defaults are SQLite's and the driver's: a rollback journal
// (journal_mode DELETE), no busy timeout, and deferred BEGIN, which takes
// no lock until the transaction first reads or writes.
//
// Waits are the scheduler's, never the machine's clock: every connection
// has a busy handler of the harness in place of SQLite's, which sleeps. A
// wait the engine would make (a connection with a busy timeout meeting a
// lock another connection holds) is a scheduling point: the worker parks
// as "waiting for a lock", and the scheduler has the engine try again when
// the schedule moves it. When it meets the lock again and no other worker
// can move (a deadlock, or a lock the handler left held), the wait is given
// up and the engine answers SQLITE_BUSY, as when its busy timeout runs out;
// a handler should treat it as transient. A busy answer the engine gives at
// once is returned to the handler: with no busy timeout, and where SQLite
// refuses to wait whatever the timeout (two deferred transactions that
// both read and then write: the second's write, SQLite's deadlock rule; a
// write on a stale snapshot in WAL, SQLITE_BUSY_SNAPSHOT). A PRAGMA
// busy_timeout the handler runs changes the timeout from then on, as it
// would. No wait is ever real, so the same scenario gives the same trace,
// byte for byte.
//
// # Time
//
// A run reads one clock, the scenario's: its time zero is
// 2000-01-01T00:00:00Z, and it moves only with the scenario (Advance
// steps, and the drain moving to the broker's next deadline). It reaches
// every clock the consumer can read, in every entry point (Check, Hunt,
// Replay, and so fuzzrun consumer, IDEMCHECK_REPLAY and fuzzrun
// -replay):
//
//   - The broker's: deliveries, ack timeouts, backoffs and the events'
//     occurredAt.
//   - The handler's: each scenario plays in a testing/synctest bubble of
//     its own, so time.Now, time.Since, timers and time.Sleep read the
//     scenario's time, and the same scenario sees the same times. A
//     process consumer's nowMs (impl/adapter/consumerproc) is read there
//     too. The bubbles come from internal/bubble, which obtains a
//     *testing.T of its own (see that package for how, and its limits);
//     where it cannot (a test binary's TestMain before m.Run, a program
//     that has not parsed its flags), Check falls back on its own T, and
//     Hunt and Replay play on the machine's clock and say so.
//   - The database's own (see internal/consumerharness/sqlclock): on SQLite,
//     CURRENT_TIMESTAMP, CURRENT_DATE, CURRENT_TIME and the date
//     functions (datetime, date, time, julianday, unixepoch, strftime,
//     timediff) given 'now' or no time value, rewritten into calls of a
//     function of the harness; on PostgreSQL, now(), transaction_timestamp(),
//     statement_timestamp(), clock_timestamp() and timeofday(), which the
//     run's schema defines ahead of pg_catalog, and CURRENT_TIMESTAMP,
//     LOCALTIMESTAMP, CURRENT_DATE, CURRENT_TIME and LOCALTIME, rewritten
//     into now(). now() keeps the transaction's start, as PostgreSQL's
//     does. Workers' statements, the schema (so column defaults: DEFAULT
//     CURRENT_TIMESTAMP, DEFAULT now()) and the effects and dedupe queries
//     are all rewritten; the trace shows each statement as written.
//
// What stays on the machine's clock is never silent: the trace names it
// at the statement ("-- machine's clock: ..."), scenario.Outcome's MachineClock and
// Result.MachineClock list it, the report prints it as a NOTE (and Check,
// when it passes, logs it). That is: PostgreSQL's literals 'now', 'today',
// 'tomorrow' and 'yesterday' cast to a date/time type ('now'::timestamptz,
// DEFAULT 'now'), its clock functions named with their schema
// (pg_catalog.now()), age() with one argument, such a literal passed as a
// bound parameter (the database parses it where no rewriting reaches), a
// backend that does not follow the scenario's clock, and the handler's
// clock when no bubble could be had.
//
// Limits. The handler's clock is the bubble's: the handler's own sleeps
// and timers move it ahead of the scenario's (the broker's and the
// database's stay with the scenario). The clock is one for all workers
// (no per-worker skew). Inside a PostgreSQL REPEATABLE READ or
// SERIALIZABLE transaction, statement_timestamp() and clock_timestamp()
// read the scenario's time as the transaction's snapshot has it. A
// handler blocked on something outside the bubble (I/O, a sync.Mutex, a
// channel made outside the run) stops the bubble's clock, so the run's own
// watchdog cannot fire; a guard outside the bubble, on the machine's
// clock, then gives the run up after 10 s and reports it hung (law runs),
// leaving its goroutines to end when what blocks them does. Durations the
// harness reports (Result.Elapsed and FoundAfter, fuzzrun's scenarios/s)
// are the machine's.
//
// # Verdicts
//
// The laws (see package consumertest/laws) are judged from the effects query, the dedupe query,
// the broker and the run's record of every delivery (scenario.Delivery): single
// credit per event, nothing lost once quiet (each healthy event applied
// exactly once or dead-lettered), healthy-applied (a healthy event is in
// the dead-letter queue only when the harness's own faults spent its
// attempts, and a poison event is dead-lettered and never applied), replay
// leaves the effects unchanged, bounded attempts with dead-letter metadata,
// atomicity of the effect and the mark (when Dedupe is set), and "runs":
// the handler does not panic, leave a transaction open, hang outside the
// database, loop forever, or leave goroutines running.
//
// The harness's own faults are an injected failure (a Fail step), a crash
// of the worker holding the delivery, an ack timeout (the schedule did not
// move the worker before its ack deadline), a lock timeout the scheduler
// forced in a deadlock between workers or a busy answer while another
// worker held the lock, and a context that ended as the scenario's time
// moved. A nack or a poison
// answer in a delivery none of them hit is the consumer giving up on the
// event by itself: a consumer that answers "locked" on every redelivery
// after one failed attempt, until max_attempts, loses a healthy event. A
// duplicate's copy dead-lettered while another copy applied the event
// breaks nothing: the event is applied. For Aggregate effects the law
// holds as far as totals tell: each user's total must be explained by the
// events that must be applied, the healthy ones the consumer gave up on
// included, plus any subset of those the harness's faults excuse. A
// passing run's Result.Checks is the number of scenarios played.
//
// A consumer that keeps its own retry count and dead-letter table, and
// acks what it dead-letters, declares its dead-letter query
// (Consumer.DeadLetters): those events count as dead-lettered, a healthy
// one excused only when the harness's faults hit as many of its deliveries
// as the broker's policy retries. Scenarios draw payload collisions (two
// events with equal payloads under ids of their own, Event.Payload): both
// are to be applied.
//
// Goroutines a handler or a Worker factory starts carry the run's pprof
// labels (who started them); those still alive when the scenario ends are
// reported with their stack (exactly, the bubble having settled; without a
// bubble, once the process has grown by more than a few goroutines, since
// others may still be on their way out).
//
// # Classifying errors
//
// A handler (handler.Handler: func(ctx, *sql.DB, handler.Message) error)
// returns nil (ack), handler.Poison(err) for a message that can never
// succeed (dead-lettered
// at once), or any other error (transient: nacked and retried with
// backoff, dead-lettered after max_attempts). The harness produces poison
// events as events with amount_cents <= 0 (Message.Poisoned). Package
// consumertest/handler holds what a handler names: Message, Handler,
// Worker, Poison, Point and Database are package impl/contract/handler's
// under the front door's path, and a consumer of its own message type is
// put under the harness with handler.HandlerOf or handler.WorkerOf.
//
// # Passing
//
// A Check that passes logs one line (go test -v shows it): the scenarios
// played, how many of the coverage situations (laws.Situations) they reached,
// naming those never reached, and the seed (-rapid.seed=N plays the same
// scenarios again, with the same Checks and MaxSteps).
//
// # PostgreSQL
//
// The option Postgres(dsn) plays the scenarios on PostgreSQL instead
// (conventionally the DSN is in $IDEMCHECK_POSTGRES_DSN, see PostgresEnv;
// fuzzrun consumer NAME -db postgres does the same). The handler gets a
// *sql.DB over pgx's database/sql driver, so its SQL is PostgreSQL's ($1
// placeholders; SQLite accepts them too, which is how the examples run on
// both). Every delivery's context names the database (handler.Database:
// "sqlite" or "postgres"), for SQL that differs.
//
// Isolation: each Check, Hunt or Replay gets a database of its own, made
// from template1 (idemcheck_r<pid>_<n>_<random>_w; the role needs
// CREATEDB), and drops it when it ends, so that whatever the team's schema
// makes (schemas of its own, tables in any of them, sequences, functions,
// triggers, types, views, seeded rows) stays in the run: two runs never
// meet, even when both schemas say CREATE SCHEMA projection. Unqualified
// names are in public, as on a database of the team's own. The team's
// schema runs once, in the first scenario; the harness then reads from the
// catalog the tables and sequences it made, in every schema, and the rows
// it seeded, and every later scenario starts by deleting every row,
// putting the seeded rows back and setting the sequences back, in one
// transaction with triggers and foreign keys off (session_replication_role
// = replica). What a scenario commits to the schema itself is gone too:
// event triggers note its DDL; objects the scenario made (a table a
// library makes on first use, an index, a schema, a view, a function, a
// type, with what they hold) are dropped (undo), and any other change (an
// ALTER or a DROP of the schema's objects, a GRANT) gets the run a new copy
// of a template database (_t) where the schema ran again, on first need.
// CREATE ... IF NOT EXISTS of what the schema made changes nothing and
// costs nothing; temporary objects go with the connection's session.
// Measured on this 2-core machine while other jobs held it (load average
// 7-12), in backend.BenchmarkPostgresReset: the reset 1.2 ms, undoing a
// table 12 ms, a new copy 0.37 s (dropping the old database, copying the
// template, connecting again); the ADR example plays 143-167 scenarios a
// second at load average 8, 79-96 at 10-12 (as with a schema per run,
// before: 133-174 and 75-105), one whose handler makes a table on first
// use 19, one that alters the schema 2. A run costs a CREATE DATABASE
// and a DROP DATABASE, which makes the server checkpoint: a one-scenario
// Replay takes 0.48-0.59 s at load average 6, 0.12-0.15 s with a schema
// per run. A role that is not a superuser may neither switch triggers off
// nor make event triggers: each of its scenarios gets a new copy, exact
// but slow (1-3 scenarios a second). A database per run was chosen over a
// schema per run, which cannot hold a schema's own schemas, types or
// functions (rewriting the team's names would not reach its dynamic SQL),
// and over a database copied for every scenario, which costs a copy each
// time. Autovacuum is off on the team's tables (the harness vacuums them
// every 200 scenarios, between two scenarios), so that its locks never
// make a worker wait.
//
// Leftovers: every connection of a run bears its name (application_name
// idemcheck_r<pid>_<n>_<random>), and one of them, on the DSN's database,
// lives from before the run's databases are made until they are dropped.
// A run killed before its end (SIGKILL, a test binary's timeout) leaves
// them; the next run's start, in any process, drops every database so
// named whose run has no connection left (the server ends the connections
// of a process that dies), and never a live run's.
//
// Refused, as bad input naming the statement: what belongs to the whole
// server, which dropping the run's databases would not take away, so that
// it would meet the next run or another in parallel: CREATE, ALTER or DROP
// of a role (USER, GROUP), a database, a tablespace, an extension or a
// subscription; a role's membership (GRANT role TO role); privileges on a
// database, a tablespace or a parameter; ALTER SYSTEM; REASSIGN and DROP
// OWNED; comments and security labels on roles, databases and
// tablespaces; replication slots and origins. The harness reads every
// statement of the schema and of the workers before it runs, DO blocks and
// function bodies included, and the strings they EXECUTE; a name built at
// run time escapes it. A worker's refused statement fails in the handler,
// and the run stops with the error before its next scenario. CREATE
// EXTENSION IF NOT EXISTS of an extension template1 has passes: install
// in template1 an extension the schema needs.
//
// Connections are pooled across the scenarios of a run and made outside
// any testing/synctest bubble. A worker's connection that closes (the
// worker stops or crashes) is rolled back, RESET ALL, its authorization
// and role reset, its temporary tables, sequence state, advisory locks,
// LISTENs, held cursors and PREPAREd statements discarded, before Close
// returns: what the server does when a connection dies, but at a moment
// the schedule decides.
//
// Lock waits: every worker connection runs with lock_timeout = 2ms (see
// backend.LockWait). While a worker's statement runs, no other worker
// moves, so a statement that waits at all waits for a lock that only
// another worker's next move can release: the wait always ends in the lock
// timeout, which the harness takes as "waiting for a lock", exactly as
// SQLite's busy answer. So that the team's transaction survives it, a
// statement inside a transaction while another connection of the scenario
// is inside one runs under a savepoint, rolled back to on a lock timeout
// (queries read their rows in full, so the timeout is the statement's
// error). The scheduler retries the statement when the schedule moves the
// worker; a deadlock (it meets the lock again while no other worker can
// move) returns the lock timeout error (SQLSTATE 55P03, "canceling
// statement due to lock timeout") to the handler. Unlike a real lock
// timeout, the transaction is left usable. PostgreSQL's own deadlock
// detector never runs: two statements never wait at once. A wait no
// savepoint covers (a session-level advisory lock another worker holds
// outside any transaction) aborts the transaction and returns the lock
// timeout, as PostgreSQL would.
//
// What is reproducible on PostgreSQL: the drawn scenario and its schedule
// (rapid, the seed), and, for a consumer that reads neither the server's
// clock nor anything physical, the trace byte for byte and so the verdict
// (measured by BenchmarkPostgresTracesRepeat: 500 drawn scenarios against
// two consumers, each of the 1,000 runs played twice, 444 of them with
// lock waits: no trace differed; TestPostgresDrawnScenariosReplayTheSame and
// TestPostgresLockWaitParksTheWaiterAndReplaysTheSame keep checking it).
// The server's clock is the scenario's (see Time): the harness's schema
// idemcheck, in the run's database, defines the clock functions, every
// connection's search_path is public, idemcheck, pg_catalog (so that
// calls, function bodies and column defaults in any schema the team makes
// reach them), and they read a clock table of the harness
// (idemcheck.clock, which the reset never touches). A search_path the team
// sets itself (SET search_path, a function's SET search_path, set_config)
// puts pg_catalog's clock functions first: the statement that sets it is
// named as on the machine's clock. Not reproducible: what Time says stays
// on the machine's clock, random() and gen_random_uuid(), transaction
// ids, ctid, and the order of rows a query without ORDER BY returns (the
// physical layout changes from one scenario to the next). A lock held by
// something outside the run (another client on the same tables,
// autovacuum truncating a system catalog) would show as a wait the
// schedule did not decide; none was seen in the measure.
//
// # Native fuzzing
//
// Fuzz makes the consumer a target of Go's coverage-guided fuzzing:
//
//	func FuzzLedger(f *testing.F) { consumertest.Fuzz(f, ledgerConsumer) }
//
// go test ./ledger -run '^$' -fuzz '^FuzzLedger$' (from the module's
// root; -run '^$' so that a failing test of the package does not stop go
// test before it fuzzes) mutates byte strings, each decoded to a
// scenario by scenario.FuzzScenario: three header bytes (workers and max_attempts,
// events and their users, poison), then one byte per step, so that every
// input is a valid scenario and the engine's mutations and minimisation
// work step by step (rapid.MakeFuzz reads eight bytes per draw and skips
// inputs that run short; this form wastes none). Each input plays in a
// testing/synctest bubble and is judged as under Check. A failing input is
// written by the engine to testdata/fuzz/FuzzLedger (after it minimised
// the bytes); plain go test replays it and fails with Check's report,
// after the reduction pass (skipped while fuzzing: the engine minimises,
// and the go test ./ledger -run '^FuzzLedger$/^HASH$' command the report
// names gives the reduced report). A failing seed input names its own
// command (go test ./ledger -run '^FuzzLedger$/^seed#N$'). Six
// seed inputs give plain go test a few scenarios to play; they catch six
// of the seven broken example consumers, and go test -fuzz finds the
// seventh (markfirst, a crash between two commits) within two seconds of
// fuzzing. scenario.FuzzInput turns a scenario of one's own into one more seed.
//
// # What each statement returned
//
// A worker's line of a database call ends with what the call returned to
// the handler: "-> 1 row: (0)" for a query (the values of the rows the
// handler was handed, the first three, each value cut to 32 characters),
// "-> no rows", "-> 1 row affected" or "-> 0 rows affected" for an exec
// (an ON CONFLICT DO NOTHING that inserted nothing), "-> error: ..." for a
// call the database refused. The hook records them as the calls return,
// on the worker's goroutine while the scheduler waits for it, so the same
// scenario gives the same trace; nothing the handler reads changes. Rows
// the handler closed without reading (QueryRow of a query with several
// rows) are counted, never shown: "-> 3 rows, 1 read: ("e1") (2 more
// closed unread)". Rows never closed (the worker crashed while it read
// them) say what was read before.
//
// # Canonical names
//
// A counterexample, once reduced, is named as the generator would have
// drawn it had it drawn only what is left: events e1, e2, ... (with the
// generator's amounts, 100 cents times their number), users u1, u2, ...
// and workers w1, w2, ... in the order they first appear, provided the
// renamed scenario still breaks the same law (the reduction replays it). The
// drain's round robin starts with w1.
//
// # The trace as data
//
// scenario.Trace's Entries gives each line of a trace with who acted (a worker, the
// broker, or the harness for the phases), the worker and event concerned,
// the database call, the scenario's time, the step of the schedule, the
// dead-letter count, what the call returned (Result) and whether it wrote
// the consumer's effects (Effect): what a report needs to draw a lane per worker and one
// for the broker (package report does, for fuzzrun consumer). The text is
// the same as String prints, byte for byte.
//
// # Model checking
//
// Verify and Explore try every schedule within Bounds instead of drawing
// some: each choice of the scheduler (who moves, which message an idle
// worker receives, where a crash or an injected failure lands, when the
// broker duplicates or replays, when time moves) is enumerated, bounded by
// preemptions (iterative deepening: the counterexample found has the
// fewest), reduced by sleep sets over what each call touches and by state
// caching. A schedule is a scenario.Scenario: a counterexample replays with Replay
// and goes to the corpus. DefaultBounds cover every kind of fault at least
// once, in three searches made in turn (Bounds.Then); a verdict names
// what its bounds leave out. See Explore for what is assumed, and
// docs/model-checking-consumers.md.
//
// # Regressions
//
// Check, Verify and Fuzz replay the consumer's saved cases (the corpus
// directory, testdata/consumertest by default) before any search: one that
// still breaks a law fails the test at once (see regress.go). A failure's
// report ends with the command that replays its case alone, from the
// module's root (IDEMCHECK_REPLAY=FILE go test ./PKG -run '^TestX$'); a
// Check the variable names no case of logs why and checks nothing, so
// that go test ./... with it set fails nowhere else (see replayenv.go).
//
// # Database backends
//
// The database is behind a small seam (internal/consumerharness/backend):
// SQLite, the default, and PostgreSQL implement it.
package consumertest
