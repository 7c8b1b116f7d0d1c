package consumerproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/impl/adapter/internal/lineproc"
	"github.com/idemcheck/idemcheck/impl/contract/handler"
	"github.com/idemcheck/idemcheck/internal/sqlscan"
)

// Version is the protocol version this package speaks (PROTOCOL.md). A
// process may answer MinVersion or any version up to Version.
const Version = 2

// MinVersion is the oldest version this package still serves: a process of
// version 1 runs as before, one process per worker, never reset.
const MinVersion = 1

// The types of the harness's lines.
const (
	TypeHello   = "hello"
	TypeDeliver = "deliver"
	TypeResult  = "result"
	// TypeReset (version 2) asks a process that declared "reset" in its
	// hello to forget everything and serve the worker it names; the
	// process answers a line of the same type.
	TypeReset = "reset"
)

// The types of the process's requests.
const (
	TypeBegin    = "begin"
	TypeCommit   = "commit"
	TypeRollback = "rollback"
	TypeExec     = "exec"
	TypeQuery    = "query"
	TypePoint    = "point"
	TypeDone     = "done"
)

// The outcomes a done request may carry.
const (
	OutcomeAck    = "ack"
	OutcomeNack   = "nack"
	OutcomePoison = "poison"
)

// The codes of an error result.
const (
	// CodeUnique: the statement violated a unique or primary-key
	// constraint (SQLite's SQLITE_CONSTRAINT_UNIQUE or _PRIMARYKEY,
	// PostgreSQL's 23505): the usual "duplicate, skip" signal.
	CodeUnique = "unique_violation"
	// CodeError: any other error of the database.
	CodeError = "error"
	// CodeBadRequest: a request the harness refuses without running it,
	// such as a begin inside a transaction or a commit outside one.
	CodeBadRequest = "bad_request"
)

// wireMessage is a handler.Message on the wire.
type wireMessage struct {
	EventID        string    `json:"eventId"`
	Event          wireEvent `json:"event"`
	Topic          string    `json:"topic"`
	Group          string    `json:"group"`
	Tenant         string    `json:"tenant"`
	IdempotencyKey string    `json:"idempotencyKey"`
	Attempts       int       `json:"attempts"`
	LastError      string    `json:"lastError"`
}

// wireEvent is the OrderPaid event on the wire.
type wireEvent struct {
	EventID      string `json:"eventId"`
	OccurredAtMs int64  `json:"occurredAtMs"`
	Tenant       string `json:"tenant"`
	OrderID      string `json:"orderId"`
	UserID       string `json:"userId"`
	AmountCents  int64  `json:"amountCents"`
}

func toWire(m handler.Message) wireMessage {
	e := m.Event
	return wireMessage{
		EventID: m.EventID,
		Event: wireEvent{EventID: e.EventID, OccurredAtMs: e.OccurredAtMs, Tenant: e.Tenant, OrderID: e.OrderID,
			UserID: e.UserID, AmountCents: e.AmountCents},
		Topic: m.Topic, Group: m.Group, Tenant: m.Tenant, IdempotencyKey: m.IdempotencyKey,
		Attempts: m.Attempts, LastError: m.LastError,
	}
}

// request is one line of the process. Pointers tell a missing field from a
// zero.
type request struct {
	Type     string            `json:"type"`
	Protocol *int              `json:"protocol"`
	Delivery *int64            `json:"delivery"`
	SQL      *string           `json:"sql"`
	Args     []json.RawMessage `json:"args"`
	What     string            `json:"what"`
	Outcome  string            `json:"outcome"`
	Error    string            `json:"error"`
	// Reset, in a hello of version 2, declares that the process answers
	// reset requests.
	Reset bool `json:"reset"`
	// The declarations a hello may carry (see Declaration).
	Schema    string `json:"schema"`
	Effects   string `json:"effects"`
	Aggregate bool   `json:"aggregate"`
	Dedupe    string `json:"dedupe"`
}

// marshal encodes a line (json escapes any newline inside).
func marshal(v any) []byte {
	b, err := lineproc.Marshal(v)
	if err != nil {
		// Every line is built of strings, numbers, booleans, nil and
		// slices of them: it always encodes.
		panic(err)
	}
	return b
}

// parse decodes one line of the process and checks that it is a request
// of delivery (0: the handshake) with the fields its type requires.
func parse(line []byte, delivery int64) (request, error) {
	var r request
	if !lineproc.ValidJSONObject(line) {
		return r, fmt.Errorf("answered garbage (not a JSON object): %q", lineproc.Clip(line))
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("answered garbage (%v): %q", err, lineproc.Clip(line))
	}
	if delivery == 0 {
		switch {
		case r.Type != TypeHello:
			return r, fmt.Errorf("answered the hello with type %q, not \"hello\": %q", r.Type, lineproc.Clip(line))
		case r.Protocol == nil:
			return r, fmt.Errorf("answered the hello without a protocol version: %q", lineproc.Clip(line))
		case *r.Protocol < MinVersion || *r.Protocol > Version:
			return r, fmt.Errorf("speaks protocol version %d; this harness speaks versions %d to %d", *r.Protocol, MinVersion, Version)
		case r.Reset && *r.Protocol < 2:
			return r, fmt.Errorf("declares \"reset\" in a hello of protocol version %d; reset is version 2: answer \"protocol\": 2", *r.Protocol)
		}
		return r, nil
	}
	switch {
	case r.Delivery == nil:
		return r, fmt.Errorf("sent a request without a delivery: %q", lineproc.Clip(line))
	case *r.Delivery != delivery:
		return r, fmt.Errorf("sent a request for delivery %d during delivery %d: requests must belong to the delivery in hand", *r.Delivery, delivery)
	}
	switch r.Type {
	case TypeBegin, TypeCommit, TypeRollback:
	case TypeExec, TypeQuery:
		if r.SQL == nil {
			return r, fmt.Errorf("sent %s without the \"sql\" field: %q", r.Type, lineproc.Clip(line))
		}
	case TypePoint:
		if r.What == "" {
			return r, fmt.Errorf("sent point without the \"what\" field: %q", lineproc.Clip(line))
		}
	case TypeDone:
		switch r.Outcome {
		case OutcomeAck, OutcomeNack, OutcomePoison:
		default:
			return r, fmt.Errorf("sent done with outcome %q, not one of ack, nack, poison: %q", r.Outcome, lineproc.Clip(line))
		}
	default:
		return r, fmt.Errorf("sent a request of unknown type %q: %q", r.Type, lineproc.Clip(line))
	}
	return r, nil
}

// parseReset checks the process's answer to a reset request.
func parseReset(line []byte) error {
	var r request
	if !lineproc.ValidJSONObject(line) {
		return fmt.Errorf("answered garbage (not a JSON object): %q", lineproc.Clip(line))
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("answered garbage (%v): %q", err, lineproc.Clip(line))
	}
	if r.Type != TypeReset {
		return fmt.Errorf("answered the reset with type %q, not \"reset\": %q", r.Type, lineproc.Clip(line))
	}
	return nil
}

// describe names a request for the trace and for errors.
func describe(r request) string {
	switch r.Type {
	case TypeExec, TypeQuery:
		return r.Type + " " + strconv.Quote(sqlscan.Short(*r.SQL, 123))
	case TypePoint:
		return "point " + strconv.Quote(r.What)
	case TypeDone:
		return "done " + r.Outcome
	}
	return r.Type
}

// args decodes a request's arguments into driver values: integers become
// int64, other numbers float64; strings, booleans and null stay themselves.
func args(raw []json.RawMessage) ([]any, error) {
	out := make([]any, len(raw))
	for i, r := range raw {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("argument %d: %v", i+1, err)
		}
		switch x := v.(type) {
		case json.Number:
			if n, err := x.Int64(); err == nil {
				out[i] = n
			} else if f, err := x.Float64(); err == nil {
				out[i] = f
			} else {
				return nil, fmt.Errorf("argument %d: number %s out of range", i+1, x)
			}
		case string, bool, nil:
			out[i] = x
		default:
			return nil, fmt.Errorf("argument %d is %s; arguments are strings, numbers, booleans or null", i+1, r)
		}
	}
	return out, nil
}

// value turns a scanned column value into its JSON form: numbers, strings
// (text and valid UTF-8 blobs; times in RFC 3339), booleans and null.
func value(v any) any {
	switch x := v.(type) {
	case nil, int64, string, bool:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return fmt.Sprintf("%x", x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// errorCode classifies a database error for the process.
func errorCode(err error) string {
	var sqlite interface{ Code() int } // modernc.org/sqlite's *Error
	if errors.As(err, &sqlite) {
		// SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY.
		if c := sqlite.Code(); c == 2067 || c == 1555 {
			return CodeUnique
		}
		return CodeError
	}
	var pg interface{ SQLState() string } // pgx's *pgconn.PgError
	if errors.As(err, &pg) {
		if pg.SQLState() == "23505" {
			return CodeUnique
		}
		return CodeError
	}
	if s := err.Error(); strings.Contains(s, "UNIQUE constraint failed") || strings.Contains(s, "duplicate key value violates unique constraint") {
		return CodeUnique
	}
	return CodeError
}
