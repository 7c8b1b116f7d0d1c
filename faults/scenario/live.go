package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// Live is a scenario for a real broker (impl/contract/broker.Live). Real
// time moves in it, so only its schedule is reproducible: which events are
// produced, retried and failed, which consumer crashes, stalls or nacks
// its next delivery and when the broker restarts. When a redelivery
// arrives, and so how deliveries of different messages interleave, is the
// broker's timing and is not.
//
// It is encoded on its own (kind "live"), with the same version, and kept
// under corpus/brokers/.
type Live struct {
	Version int    `json:"version"`
	Kind    Kind   `json:"kind"`
	Topic   string `json:"topic"`
	// Consumers are the consumer groups; one reference worker each.
	Consumers []string `json:"consumers"`
	// Policy is the retry policy; its fields are encoded at this level.
	broker.Policy
	Events []Event    `json:"events"`
	Steps  []LiveStep `json:"steps"`
}

// KindLive marks a Live scenario.
const KindLive Kind = "live"

// LiveOp names a live schedule step.
type LiveOp string

// The live schedule's vocabulary.
const (
	// LiveProduce: the producer publishes Event with its id as the
	// idempotency key.
	LiveProduce LiveOp = "produce"
	// LiveRetry: the producer waits Ms, then publishes Event again (a
	// producer retry after a lost acknowledgement).
	LiveRetry LiveOp = "retry-produce"
	// LiveConsume: Consumer's worker takes up to N deliveries and runs
	// each through its whole pipeline.
	LiveConsume LiveOp = "consume"
	// LiveCrash: Consumer's worker takes its next delivery, runs N
	// pipeline steps (0: before the claim; 1: after the claim; 3: after the
	// commit, before the ack), then crashes: its connection closes without
	// an ack.
	LiveCrash LiveOp = "crash"
	// LiveNack: Consumer's worker nacks its next delivery without running
	// it (reason "fault: nack").
	LiveNack LiveOp = "nack"
	// LiveStall: Consumer's worker runs its next delivery to the ack and
	// never sends it: the broker's ack timeout must redeliver.
	LiveStall LiveOp = "stall"
	// LiveRestart: the broker stops and starts again over its storage.
	LiveRestart LiveOp = "restart"
)

// LiveStep is one scheduled action. Only the fields its Op names are read.
type LiveStep struct {
	Op       LiveOp `json:"op"`
	Event    int    `json:"event,omitempty"`
	Consumer string `json:"consumer,omitempty"`
	N        int    `json:"n,omitempty"`
	Ms       int64  `json:"ms,omitempty"`
}

// Validate reports the first thing wrong with l, naming the field.
func (l *Live) Validate() error {
	if l.Version != Version {
		return fmt.Errorf("version: got %d, this harness reads version %d", l.Version, Version)
	}
	if l.Kind != KindLive {
		return fmt.Errorf("kind: %q is not %q", l.Kind, KindLive)
	}
	if l.Topic == "" {
		return fmt.Errorf("topic: empty")
	}
	if len(l.Consumers) == 0 {
		return fmt.Errorf("consumers: need at least one")
	}
	groups := map[string]bool{}
	for i, c := range l.Consumers {
		if c == "" || groups[c] {
			return fmt.Errorf("consumers[%d]: %q is empty or repeated", i, c)
		}
		groups[c] = true
	}
	switch {
	case l.MaxAttempts < 1:
		return fmt.Errorf("maxAttempts: must be positive, got %d", l.MaxAttempts)
	case l.BackoffMs < 1 || l.MaxBackoffMs < l.BackoffMs:
		return fmt.Errorf("backoffMs, maxBackoffMs: want 1 <= backoffMs <= maxBackoffMs, got %d, %d", l.BackoffMs, l.MaxBackoffMs)
	case l.AckTimeoutMs < 1:
		return fmt.Errorf("ackTimeoutMs: must be positive, got %d", l.AckTimeoutMs)
	}
	ids := map[string]bool{}
	for i, e := range l.Events {
		switch {
		case e.ID == "" || ids[e.ID]:
			return fmt.Errorf("events[%d].id: %q is empty or repeated", i, e.ID)
		case e.Fate != FateOK && e.Fate != FateTransient && e.Fate != FatePoison:
			return fmt.Errorf("events[%d].fate: %q is not one of \"\", %q, %q", i, e.Fate, FateTransient, FatePoison)
		case e.Transient < 0 || (e.Fate != FateTransient && e.Transient != 0):
			return fmt.Errorf("events[%d].transient: %d needs fate %q and must not be negative", i, e.Transient, FateTransient)
		}
		ids[e.ID] = true
	}
	for i, st := range l.Steps {
		if err := l.validateStep(st, groups); err != nil {
			return fmt.Errorf("steps[%d]: %w", i, err)
		}
	}
	return nil
}

func (l *Live) validateStep(st LiveStep, groups map[string]bool) error {
	needEvent := func() error {
		if st.Event < 0 || st.Event >= len(l.Events) {
			return fmt.Errorf("event: %d is out of range (%d events)", st.Event, len(l.Events))
		}
		return nil
	}
	needGroup := func() error {
		if !groups[st.Consumer] {
			return fmt.Errorf("consumer: %q is not a listed consumer", st.Consumer)
		}
		return nil
	}
	switch st.Op {
	case LiveProduce:
		return needEvent()
	case LiveRetry:
		if st.Ms < 0 || st.Ms > 10_000 {
			return fmt.Errorf("ms: %d is outside 0..10000", st.Ms)
		}
		return needEvent()
	case LiveConsume:
		if st.N < 1 || st.N > 100 {
			return fmt.Errorf("n: %d is outside 1..100", st.N)
		}
		return needGroup()
	case LiveCrash:
		if st.N < 0 || st.N > 3 {
			return fmt.Errorf("n: %d pipeline steps is outside 0..3", st.N)
		}
		return needGroup()
	case LiveNack, LiveStall:
		return needGroup()
	case LiveRestart:
	default:
		return fmt.Errorf("op: %q is not a known live step", st.Op)
	}
	return nil
}

// MarshalLive encodes l as indented JSON with a trailing newline.
func MarshalLive(l *Live) ([]byte, error) {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// UnmarshalLive decodes and validates a live scenario; unknown fields are
// errors.
func UnmarshalLive(data []byte) (*Live, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var l Live
	if err := dec.Decode(&l); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the scenario object")
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return &l, nil
}
