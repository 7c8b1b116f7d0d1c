package consumerproc_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// fakeEnv selects a fake consumer: the test binary re-executed with this
// variable set plays a (mis)behaving consumer process instead of running
// the tests.
const fakeEnv = "CONSUMERPROC_FAKE"

// dollarEnv makes the fake write PostgreSQL's placeholders ($1, $2, ...).
const dollarEnv = "CONSUMERPROC_DOLLAR"

// dollars numbers the ? placeholders of q.
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// resetEnv makes the fake speak version 2 and declare reset; its value
// says what it does on a reset: "clear" forgets what it kept, "keep"
// keeps it (a process that ignores reset), "die" dies, "garbage" answers
// garbage; "v1" declares reset in a hello of version 1.
const resetEnv = "CONSUMERPROC_RESET"

// line is a line of the harness, as the fake reads it.
type line struct {
	Type     string          `json:"type"`
	Worker   string          `json:"worker"`
	Delivery int64           `json:"delivery"`
	Database string          `json:"database"`
	OK       bool            `json:"ok"`
	Code     string          `json:"code"`
	Error    string          `json:"error"`
	Rows     [][]any         `json:"rows"`
	Affected int64           `json:"rowsAffected"`
	NowMs    int64           `json:"nowMs"`
	Message  json.RawMessage `json:"message"`
}

// fake plays the consumer named by mode on stdin/stdout and returns the exit
// status.
func fake(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 4<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	recv := func() (line, bool) {
		if !in.Scan() {
			return line{}, false
		}
		var l line
		if err := json.Unmarshal(in.Bytes(), &l); err != nil {
			fmt.Fprintln(os.Stderr, "fake: bad line:", err)
			os.Exit(1)
		}
		return l, true
	}
	switch mode {
	case "exit3":
		fmt.Fprintln(os.Stderr, "cannot connect: boom")
		return 3
	case "hang-hello":
		time.Sleep(time.Hour)
	case "version3":
		recv()
		send(map[string]any{"type": "hello", "protocol": 3})
		time.Sleep(time.Hour)
	case "no-version":
		recv()
		send(map[string]any{"type": "hello"})
		time.Sleep(time.Hour)
	}
	hello, ok := recv()
	if !ok {
		return 0
	}
	// Under CONSUMERPROC_RESET the fake speaks version 2, declares reset,
	// and keeps in memory the events it credited (see "remember").
	resetMode := os.Getenv(resetEnv)
	answer := map[string]any{"type": "hello", "protocol": 1, "schema": "CREATE TABLE t (x)", "effects": "SELECT x FROM t",
		"aggregate": mode == "aggregate", "dedupe": "SELECT 1"}
	switch resetMode {
	case "":
	case "v1": // a version-1 hello that declares reset: refused
		answer["reset"] = true
	default:
		answer["protocol"], answer["reset"] = 2, true
	}
	send(answer)
	worker := hello.Worker
	credited := map[string]bool{} // the process's memory
	reset := func(l line) {
		switch resetMode {
		case "die":
			fmt.Fprintln(os.Stderr, "reset failed: boom")
			os.Exit(4)
		case "garbage":
			fmt.Fprintln(out, "not a reset")
			out.Flush()
			return
		case "clear":
			clear(credited)
		}
		worker = l.Worker
		send(map[string]any{"type": "reset"})
	}
	// abandoned unwinds a delivery the harness reset the process in.
	type abandoned struct{}
	for {
		d, ok := recv()
		if !ok {
			return 0
		}
		if d.Type == "reset" {
			reset(d)
			continue
		}
		var msg struct {
			EventID string `json:"eventId"`
			Group   string `json:"group"`
			Event   struct {
				UserID      string `json:"userId"`
				AmountCents int64  `json:"amountCents"`
			} `json:"event"`
		}
		_ = json.Unmarshal(d.Message, &msg)
		// Placeholders by database: PostgreSQL's when the deliver says
		// so (version 2) or, for a version-1 fake, when told.
		dollar := d.Database == "postgres" || (resetMode == "" && os.Getenv(dollarEnv) != "")
		call := func(req map[string]any) line {
			req["delivery"] = d.Delivery
			if q, ok := req["sql"].(string); ok && dollar {
				req["sql"] = dollars(q)
			}
			send(req)
			r, ok := recv()
			if !ok {
				os.Exit(0)
			}
			if r.Type == "reset" {
				reset(r)
				panic(abandoned{})
			}
			return r
		}
		done := func(outcome, err string) {
			send(map[string]any{"type": "done", "delivery": d.Delivery, "outcome": outcome, "error": err})
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					if _, ok := p.(abandoned); !ok {
						panic(p)
					}
				}
			}()
			deliver(mode, d.Delivery, d.NowMs, msg.EventID, msg.Group, msg.Event.UserID, msg.Event.AmountCents, worker, d.Database, credited, call, done, send, out)
		}()
	}
}

// deliver plays one delivery of the fake consumer in mode.
func deliver(mode string, delivery, nowMs int64, eventID, group, user string, amount int64, worker, database string, credited map[string]bool,
	call func(map[string]any) line, done func(outcome, err string), send func(any), out *bufio.Writer) {
	credit := []any{eventID, user, amount}
	switch mode {
	case "hang-deliver":
		time.Sleep(time.Hour)
	case "die-deliver":
		fmt.Fprintln(os.Stderr, "TypeError: cannot read properties of undefined")
		os.Exit(1)
	case "garbage":
		fmt.Fprintln(out, "this is not json")
		out.Flush()
		time.Sleep(time.Hour)
	case "wrong-delivery":
		send(map[string]any{"type": "begin", "delivery": delivery + 1})
		time.Sleep(time.Hour)
	case "unknown-type":
		send(map[string]any{"type": "fetch", "delivery": delivery})
		time.Sleep(time.Hour)
	case "bad-outcome":
		send(map[string]any{"type": "done", "delivery": delivery, "outcome": "maybe"})
		time.Sleep(time.Hour)
	case "hang-after-exec":
		call(map[string]any{"type": "exec", "sql": "INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)", "args": credit})
		time.Sleep(time.Hour)
	case "die-after-query":
		call(map[string]any{"type": "query", "sql": "SELECT COUNT(*) FROM ledger"})
		fmt.Fprintln(os.Stderr, "out of memory")
		os.Exit(7)
	case "open-tx":
		// Begins, writes, and acks without committing.
		call(map[string]any{"type": "begin"})
		call(map[string]any{"type": "exec", "sql": "INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)", "args": credit})
		done("ack", "")
	case "remember":
		// An in-memory dedupe, as an LRU of event ids: it skips what
		// this process credited, and says who it is at a point.
		call(map[string]any{"type": "point", "what": fmt.Sprintf("%s delivery %d on %s", worker, delivery, database)})
		if credited[eventID] {
			done("ack", "")
			return
		}
		call(map[string]any{"type": "exec", "sql": "INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)", "args": credit})
		credited[eventID] = true
		done("ack", "")
	case "ok":
		// insert-first, with the outcome chosen by the user id; an amount
		// of zero or less is poison.
		if amount <= 0 {
			done("poison", "amount is not positive")
			return
		}
		switch user {
		case "poison":
			done("poison", "amount is negative")
			return
		case "nack":
			done("nack", "lock timeout")
			return
		case "clock":
			// The harness's time, in the trace.
			call(map[string]any{"type": "point", "what": fmt.Sprintf("nowMs %d", nowMs)})
		case "point":
			call(map[string]any{"type": "point", "what": "redis SET " + eventID + " NX"})
		case "bad-sql":
			r := call(map[string]any{"type": "exec", "sql": "INSERT INTO nowhere VALUES (1)"})
			done("nack", r.Code+": "+r.Error)
			return
		case "commit-outside":
			r := call(map[string]any{"type": "commit"})
			done("nack", r.Code+": "+r.Error)
			return
		}
		call(map[string]any{"type": "begin"})
		r := call(map[string]any{"type": "exec", "sql": "INSERT INTO processed_events (consumer_group, event_id) VALUES (?, ?)",
			"args": []any{group, eventID}})
		if !r.OK {
			call(map[string]any{"type": "rollback"})
			outcome := "ack"
			if r.Code != "unique_violation" {
				outcome = "nack"
			}
			done(outcome, r.Error)
			return
		}
		if r := call(map[string]any{"type": "exec", "sql": "INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)", "args": credit}); !r.OK {
			// Busy (another worker holds SQLite's lock): a transient
			// failure.
			call(map[string]any{"type": "rollback"})
			done("nack", r.Error)
			return
		}
		q := call(map[string]any{"type": "query", "sql": "SELECT event_id, amount_cents, NULL, CAST(1.5 AS REAL) FROM ledger WHERE event_id = ?",
			"args": []any{eventID}})
		if !q.OK {
			// The worker crashed under the query (the harness fails its
			// calls until it returns), or the query failed: transient.
			done("nack", q.Error)
			return
		}
		if len(q.Rows) != 1 || q.Rows[0][0] != eventID || q.Rows[0][1] != float64(amount) || q.Rows[0][2] != nil || q.Rows[0][3] != 1.5 {
			fmt.Fprintf(os.Stderr, "query answered %v\n", q.Rows)
			os.Exit(5)
		}
		call(map[string]any{"type": "commit"})
		done("ack", "")
	}
}
