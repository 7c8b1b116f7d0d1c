package procparts

import (
	"encoding/json"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/adapter/internal/lineproc"
	"github.com/idemcheck/idemcheck/impl/contract/hlc"
	"github.com/idemcheck/idemcheck/impl/contract/projector"
)

// response is one answer line. Pointers tell a missing field from a zero.
type response struct {
	ID    *int64 `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Kind  string `json:"kind"`
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
	if !lineproc.ValidJSONObject(line) {
		return fmt.Errorf("answered garbage (not a JSON object): %q", lineproc.Clip(line))
	}
	if err := json.Unmarshal(line, r); err != nil {
		return fmt.Errorf("answered garbage (%v): %q", err, lineproc.Clip(line))
	}
	switch {
	case r.ID == nil:
		return fmt.Errorf("answered without an id: %q", lineproc.Clip(line))
	case *r.ID != id:
		return fmt.Errorf("answered id %d to request %d: answers must come in order, one per request", *r.ID, id)
	case r.OK && r.Error != "":
		return fmt.Errorf("answered both ok and error: %q", lineproc.Clip(line))
	case !r.OK && r.Error == "":
		return fmt.Errorf("answered neither \"ok\":true nor an error: %q", lineproc.Clip(line))
	case !r.OK:
		return nil
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
