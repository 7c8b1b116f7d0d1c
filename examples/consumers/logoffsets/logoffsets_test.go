package logoffsets_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/consumertest"
	"github.com/idemcheck/idemcheck/examples/consumers/logoffsets"
)

func consumer() consumertest.Consumer {
	return consumertest.Consumer{
		Name:    "logoffsets",
		Schema:  logoffsets.Schema,
		Log:     &logoffsets.Consumer,
		Effects: consumertest.PerEvent(logoffsets.Effects),
	}
}

// Offsets kept in the effects' transaction survive crashes, failures,
// rebalances (zombies included) and resets of the group's offsets.
func TestOffsetsInTheTransactionHold(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		res, err := consumertest.Hunt(consumer(), consumertest.Checks(300), consumertest.Seed(seed))
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed {
			t.Fatalf("seed %d: a correct log consumer was flagged:\n%s", seed, res.Report())
		}
	}
}

func TestCheck(t *testing.T) {
	consumertest.Check(t, consumer(), consumertest.Checks(100))
}

// Fuzz plays a log consumer too: each input is a log scenario.
func FuzzLogOffsets(f *testing.F) { consumertest.Fuzz(f, consumer()) }
