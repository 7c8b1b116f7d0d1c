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
	type line struct {
		Type     string          `json:"type"`
		Delivery int64           `json:"delivery"`
		OK       bool            `json:"ok"`
		Code     string          `json:"code"`
		Error    string          `json:"error"`
		Rows     [][]any         `json:"rows"`
		Affected int64           `json:"rowsAffected"`
		NowMs    int64           `json:"nowMs"`
		Message  json.RawMessage `json:"message"`
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
	case "version2":
		recv()
		send(map[string]any{"type": "hello", "protocol": 2})
		time.Sleep(time.Hour)
	case "no-version":
		recv()
		send(map[string]any{"type": "hello"})
		time.Sleep(time.Hour)
	}
	if _, ok := recv(); !ok {
		return 0
	}
	send(map[string]any{"type": "hello", "protocol": 1, "schema": "CREATE TABLE t (x)", "effects": "SELECT x FROM t",
		"aggregate": mode == "aggregate", "dedupe": "SELECT 1"})
	for {
		d, ok := recv()
		if !ok {
			return 0
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
		call := func(req map[string]any) line {
			req["delivery"] = d.Delivery
			if q, ok := req["sql"].(string); ok && os.Getenv(dollarEnv) != "" {
				req["sql"] = dollars(q)
			}
			send(req)
			r, ok := recv()
			if !ok {
				os.Exit(0)
			}
			return r
		}
		switch mode {
		case "hang-deliver":
			time.Sleep(time.Hour)
		case "die-deliver":
			fmt.Fprintln(os.Stderr, "TypeError: cannot read properties of undefined")
			return 1
		case "garbage":
			fmt.Fprintln(out, "this is not json")
			out.Flush()
			time.Sleep(time.Hour)
		case "wrong-delivery":
			send(map[string]any{"type": "begin", "delivery": d.Delivery + 1})
			time.Sleep(time.Hour)
		case "unknown-type":
			send(map[string]any{"type": "fetch", "delivery": d.Delivery})
			time.Sleep(time.Hour)
		case "bad-outcome":
			send(map[string]any{"type": "done", "delivery": d.Delivery, "outcome": "maybe"})
			time.Sleep(time.Hour)
		case "hang-after-exec":
			call(map[string]any{"type": "exec", "sql": "INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)",
				"args": []any{msg.EventID, msg.Event.UserID, msg.Event.AmountCents}})
			time.Sleep(time.Hour)
		case "die-after-query":
			call(map[string]any{"type": "query", "sql": "SELECT COUNT(*) FROM ledger"})
			fmt.Fprintln(os.Stderr, "out of memory")
			return 7
		case "open-tx":
			// Begins, writes, and acks without committing.
			call(map[string]any{"type": "begin"})
			call(map[string]any{"type": "exec", "sql": "INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)",
				"args": []any{msg.EventID, msg.Event.UserID, msg.Event.AmountCents}})
			send(map[string]any{"type": "done", "delivery": d.Delivery, "outcome": "ack"})
		case "ok":
			// insert-first, with the outcome chosen by the user id.
			switch msg.Event.UserID {
			case "poison":
				send(map[string]any{"type": "done", "delivery": d.Delivery, "outcome": "poison", "error": "amount is negative"})
				continue
			case "nack":
				send(map[string]any{"type": "done", "delivery": d.Delivery, "outcome": "nack", "error": "lock timeout"})
				continue
			case "point":
				call(map[string]any{"type": "point", "what": "redis SET " + msg.EventID + " NX"})
			case "clock":
				// The harness's time, in the trace.
				call(map[string]any{"type": "point", "what": fmt.Sprintf("nowMs %d", d.NowMs)})
			case "bad-sql":
				r := call(map[string]any{"type": "exec", "sql": "INSERT INTO nowhere VALUES (1)"})
				send(map[string]any{"type": "done", "delivery": d.Delivery, "outcome": "nack", "error": r.Code + ": " + r.Error})
				continue
			case "commit-outside":
				r := call(map[string]any{"type": "commit"})
				send(map[string]any{"type": "done", "delivery": d.Delivery, "outcome": "nack", "error": r.Code + ": " + r.Error})
				continue
			}
			call(map[string]any{"type": "begin"})
			r := call(map[string]any{"type": "exec", "sql": "INSERT INTO processed_events (consumer_group, event_id) VALUES (?, ?)",
				"args": []any{msg.Group, msg.EventID}})
			if !r.OK {
				call(map[string]any{"type": "rollback"})
				outcome := "ack"
				if r.Code != "unique_violation" {
					outcome = "nack"
				}
				send(map[string]any{"type": "done", "delivery": d.Delivery, "outcome": outcome, "error": r.Error})
				continue
			}
			call(map[string]any{"type": "exec", "sql": "INSERT INTO ledger (event_id, user_id, amount_cents) VALUES (?, ?, ?)",
				"args": []any{msg.EventID, msg.Event.UserID, msg.Event.AmountCents}})
			q := call(map[string]any{"type": "query", "sql": "SELECT event_id, amount_cents, NULL, CAST(1.5 AS REAL) FROM ledger WHERE event_id = ?",
				"args": []any{msg.EventID}})
			if len(q.Rows) != 1 || q.Rows[0][0] != msg.EventID || q.Rows[0][1] != float64(msg.Event.AmountCents) || q.Rows[0][2] != nil || q.Rows[0][3] != 1.5 {
				fmt.Fprintf(os.Stderr, "query answered %v\n", q.Rows)
				return 5
			}
			call(map[string]any{"type": "commit"})
			send(map[string]any{"type": "done", "delivery": d.Delivery, "outcome": "ack"})
		}
	}
}
