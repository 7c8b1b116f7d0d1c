package natsbroker_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/impl/adapter/natsbroker"
	"github.com/idemcheck/idemcheck/impl/contract/broker/livetest"
)

func factory(t *testing.T, config string) *natsbroker.Factory {
	t.Helper()
	f, err := natsbroker.New(config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestLiveContractAdvisoryDLQ(t *testing.T) {
	t.Parallel()
	livetest.Run(t, factory(t, natsbroker.AdvisoryDLQ), livetest.Claims{Bounded: true, DLQ: true, LastError: true, Counts: true, Dedupe: true})
}

func TestLiveContractNoDLQ(t *testing.T) {
	t.Parallel()
	livetest.Run(t, factory(t, natsbroker.NoDLQ), livetest.Claims{Bounded: true, Counts: true, Dedupe: true})
}

func TestUnknownConfig(t *testing.T) {
	if _, err := natsbroker.New("nope"); err == nil {
		t.Fatal("an unknown configuration opened")
	}
}
