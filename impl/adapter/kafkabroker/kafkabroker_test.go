package kafkabroker_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/impl/adapter/kafkabroker"
	"github.com/idemcheck/idemcheck/impl/contract/broker/livetest"
)

// TestContractKFake: Kafka's protocol on kfake redelivers after a nack
// (a rewind) and after a crash (no commit), but counts no attempts and
// bounds nothing, keeps no DLQ and drops no repeated produce.
func TestLiveContractKFake(t *testing.T) {
	f, err := kafkabroker.New("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	livetest.Run(t, f, livetest.Claims{})
}

func TestUnknownConfig(t *testing.T) {
	if _, err := kafkabroker.New("nope"); err == nil {
		t.Fatal("an unknown configuration opened")
	}
}
