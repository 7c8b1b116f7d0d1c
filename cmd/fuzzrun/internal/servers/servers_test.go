package servers_test

import (
	"slices"
	"testing"

	"github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"
	_ "github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/servers"
)

// Importing the package registers every adapter: the targets over real
// systems, each described, and the brokers; an embedded SQLite target and
// the embedded NATS broker open here, without any server.
func TestImportRegistersTheAdapters(t *testing.T) {
	s := ext.Registered
	if s == nil {
		t.Fatal("nothing registered")
	}
	var specs []string
	for _, tg := range s.Targets {
		if tg.Doc == "" {
			t.Errorf("target %s has no description", tg.Spec)
		}
		specs = append(specs, tg.Spec)
	}
	if !slices.Equal(specs, ext.ServerTargets) {
		t.Fatalf("targets %v, want %v", specs, ext.ServerTargets)
	}
	tg, err := s.Resolve("sqlite-file")
	if err != nil || tg.Name != "sqlite-file" || tg.Consumption == nil {
		t.Fatalf("sqlite-file: %+v, %v", tg.Name, err)
	}
	if specs := s.BrokerSpecs(); !slices.Contains(specs, "nats:advisory-dlq") || !slices.Contains(specs, "kafka:kfake") {
		t.Fatalf("broker specs %v", specs)
	}
	f, err := s.Broker("nats")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Broker("activemq"); err == nil {
		t.Fatal("an unknown broker opened")
	}
	if s.LiveApp == nil || s.BrokerFix == nil {
		t.Fatal("LiveApp or BrokerFix not registered")
	}
}
