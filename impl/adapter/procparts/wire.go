package procparts

import (
	"fmt"

	"github.com/idemcheck/idemcheck/impl/adapter/internal/lineproc"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
)

// response is one answer line. Pointers tell a missing field from a zero.
type response struct {
	lineproc.Envelope
	// hello
	Protocol string `json:"protocol"`
	Version  int    `json:"version"`
	// open (hlc)
	MaxOffsetMs *int64 `json:"maxOffsetMs"`
	// tick, merge; burst
	Stamp  *hlc.Timestamp  `json:"stamp"`
	Stamps []hlc.Timestamp `json:"stamps"`
	// apply; state
	Applied *bool                   `json:"applied"`
	Reason  string                  `json:"reason"`
	Orders  *[]projector.OrderState `json:"orders"`
}

// decode parses the answer to request id (op) into r and checks that it is
// one: the right id, ok or an error, and the fields op must answer with
// (fields are the request's).
func decode(line []byte, id int64, op string, fields map[string]any, r *response) error {
	if err := lineproc.DecodeAnswer(line, id, r, &r.Envelope); err != nil || !r.OK {
		return err
	}
	missing := ""
	switch op {
	case OpHello:
		if r.Protocol == "" {
			missing = "protocol"
		}
	case OpTick, OpMerge:
		if r.Stamp == nil {
			missing = "stamp"
		}
	case OpBurst:
		if r.Stamps == nil {
			missing = "stamps"
		} else if n, _ := fields["count"].(int); len(r.Stamps) != n {
			return fmt.Errorf("answered a burst of %d with %d stamps", n, len(r.Stamps))
		}
	case OpApply:
		if r.Applied == nil {
			missing = "applied"
		}
	case OpState:
		if r.Orders == nil {
			missing = "orders"
		}
	}
	if missing != "" {
		return fmt.Errorf("answered %s without the %q field: %q", op, missing, lineproc.Clip(line))
	}
	return nil
}
