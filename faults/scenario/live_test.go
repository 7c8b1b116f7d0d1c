package scenario_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

func TestLiveRoundTripAndErrors(t *testing.T) {
	l := &scenario.Live{Version: scenario.Version, Kind: scenario.KindLive, Topic: "orders", Consumers: []string{"ledger"},
		Policy: broker.Policy{MaxAttempts: 3, BackoffMs: 5, MaxBackoffMs: 20, AckTimeoutMs: 30},
		Events: []scenario.Event{{ID: "e1"}},
		Steps: []scenario.LiveStep{{Op: scenario.LiveProduce}, {Op: scenario.LiveRetry, Ms: 150},
			{Op: scenario.LiveCrash, Consumer: "ledger", N: 3}, {Op: scenario.LiveStall, Consumer: "ledger"}, {Op: scenario.LiveRestart}}}
	b, err := scenario.MarshalLive(l)
	if err != nil {
		t.Fatal(err)
	}
	back, err := scenario.UnmarshalLive(b)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := scenario.MarshalLive(back); string(again) != string(b) {
		t.Fatalf("round trip changed the scenario:\n%s\n%s", b, again)
	}
	bad := map[string]string{
		`"maxAttempts": 3`:     `"maxAttempts": 0`,
		`"consumer": "ledger"`: `"consumer": "audit"`,
		`"n": 3`:               `"n": 4`,
		`"op": "restart"`:      `"op": "explode"`,
		`"topic": "orders"`:    `"topic": "orders", "extra": 1`,
	}
	for from, to := range bad {
		if _, err := scenario.UnmarshalLive([]byte(strings.Replace(string(b), from, to, 1))); err == nil {
			t.Errorf("replacing %s with %s was accepted", from, to)
		}
	}
}
