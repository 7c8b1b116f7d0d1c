package brokers_test

import (
	"encoding/json"
	"testing"

	"github.com/idemcheck/idemcheck/impl/system/resolve"
	"github.com/idemcheck/idemcheck/properties"
)

func TestSmoke(t *testing.T) {
	for _, spec := range resolve.BrokerSpecs() {
		f, err := resolve.Broker(spec)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := properties.RunLiveCampaign(t.Context(), properties.LiveCampaign{Factory: f, Runs: 30, Seed: 1, Workers: 4})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(rep, "", " ")
		t.Logf("%s", b)
	}
}
