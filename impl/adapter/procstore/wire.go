package procstore

import (
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/store"

	"github.com/idemcheck/idemcheck/impl/adapter/internal/lineproc"
)

// The operations of the protocol (PROTOCOL.md).
const (
	OpClaim    = "claim"
	OpBegin    = "begin"
	OpCredit   = "credit"
	OpCommit   = "commit"
	OpRollback = "rollback"
	OpFail     = "fail"
	OpGet      = "get"
	OpCleanup  = "cleanup"
	OpRecords  = "records"
	OpLedger   = "ledger"
	OpNow      = "now"
	OpReset    = "reset"
)

// The error kinds an answer may carry. Stale and not-held map to the
// contract's ErrStaleToken and ErrNotHeld; any other kind is an error of
// the operation that leaves the adapter usable.
const (
	KindStale     = "stale"
	KindNotHeld   = "not_held"
	KindUnknownTx = "unknown_tx"
	KindBad       = "bad_request"
)

// response is one answer line. Pointers tell a missing field from a zero.
type response struct {
	lineproc.Envelope
	Claim   *store.Claim        `json:"claim"`
	Tx      *int64              `json:"tx"`
	Commit  *store.CommitResult `json:"commit"`
	Found   bool                `json:"found"`
	Record  *store.Record       `json:"record"`
	Keys    []store.Key         `json:"keys"`
	Records []store.Record      `json:"records"`
	Entries []store.Entry       `json:"entries"`
	NowMs   *int64              `json:"nowMs"`
}

// decode parses the answer to request id (op) and checks that it is one:
// the right id, ok or an error, and the fields op must answer with.
func decode(line []byte, id int64, op string) (response, error) {
	var r response
	if err := lineproc.DecodeAnswer(line, id, &r, &r.Envelope); err != nil || !r.OK {
		return r, err
	}
	missing := ""
	switch op {
	case OpClaim:
		switch {
		case r.Claim == nil:
			missing = "claim"
		case r.Claim.Outcome != store.Acquired && r.Claim.Outcome != store.AlreadyProcessed && r.Claim.Outcome != store.Locked:
			return r, fmt.Errorf("answered claim outcome %q, not one of acquired, processed, locked", r.Claim.Outcome)
		}
	case OpBegin:
		if r.Tx == nil {
			missing = "tx"
		}
	case OpCommit:
		if r.Commit == nil {
			missing = "commit"
		}
	case OpGet:
		if r.Found && r.Record == nil {
			missing = "record"
		}
	case OpNow:
		if r.NowMs == nil {
			missing = "nowMs"
		}
	}
	if missing != "" {
		return r, fmt.Errorf("answered %s without the %q field: %q", op, missing, lineproc.Clip(line))
	}
	return r, nil
}
