package corpus_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/contract/broker"
)

// smallCase is a valid case: one event, one worker, produce and deliver.
func smallCase() *corpus.Case {
	s := &scenario.Scenario{Version: scenario.Version, Kind: scenario.KindConsumption, Consumption: &scenario.Consumption{
		Config: scenario.Config{
			Topic: "orders", Consumers: []string{"ledger"},
			Nodes:   []scenario.Node{{Name: "n1"}},
			Workers: []scenario.Worker{{Name: "w1", Consumer: "ledger", Node: "n1"}, {Name: "w2", Consumer: "ledger", Node: "n1"}},
			Policy:  broker.Policy{MaxAttempts: 3, BackoffMs: 200, MaxBackoffMs: 800, AckTimeoutMs: 1000}, LeaseMs: 200, RetentionMs: 10_000,
		},
		Events: []scenario.Event{{ID: "evt-0001", OrderID: "ord-1", UserID: "usr-1", AmountCents: 100}},
		Steps: []scenario.Step{
			{Op: scenario.OpProduce}, {Op: scenario.OpDeliver, Worker: "w1"}, {Op: scenario.OpRun, Worker: "w1"},
			{Op: scenario.OpAdvance, Ms: 200},
		},
	}}
	return &corpus.Case{Property: "single-credit", Law: "claim-store-dedupes", Target: "no-dedup", Summary: "s", Seed: 42,
		CaughtBy: map[string]string{"no-dedup": "single-credit/claim-store-dedupes"}, Trace: []string{"a", "b"}, Scenario: s}
}

// edited encodes smallCase, lets edit change the decoded JSON, and
// re-encodes it.
func edited(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	b, err := corpus.Encode(smallCase())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func obj(v any) map[string]any { return v.(map[string]any) }
func arr(v any) []any          { return v.([]any) }
func cons(m map[string]any) map[string]any {
	return obj(obj(m["scenario"])["consumption"])
}

func TestEncodeLoadRoundTrip(t *testing.T) {
	c := smallCase()
	b, err := corpus.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := corpus.Parse("x.json", b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := corpus.Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(b) {
		t.Fatalf("round trip changed the file:\n%s\nvs\n%s", b, again)
	}
	if got.Format != corpus.Format || got.Version != corpus.Version || got.Path != "x.json" {
		t.Fatalf("format %q version %d path %q", got.Format, got.Version, got.Path)
	}
}

// Every malformed file is refused with an error naming the file and the field.
func TestLoadRejectsMalformed(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown worker", edited(t, func(m map[string]any) {
			obj(arr(cons(m)["steps"])[2])["worker"] = "w9"
		}), `bad.json: scenario.consumption.steps[2]: worker: "w9" is not a listed worker`},
		{"unknown field in a step", edited(t, func(m map[string]any) {
			obj(arr(cons(m)["steps"])[3])["wrker"] = "w1"
		}), `bad.json: scenario.consumption.steps[3].wrker: unknown field`},
		{"unknown top-level field", edited(t, func(m map[string]any) { m["caught"] = []any{"no-dedup"} }),
			`bad.json: caught: unknown field`},
		{"wrong type", edited(t, func(m map[string]any) { obj(arr(cons(m)["steps"])[3])["ms"] = "200" }),
			`bad.json: scenario.consumption.steps[3].ms: got string "200", want an integer`},
		{"key in wrong case", edited(t, func(m map[string]any) { m["Property"] = m["property"]; delete(m, "property") }),
			`bad.json: Property: unknown field`},
		{"negative seed", edited(t, func(m map[string]any) { m["seed"] = -1 }),
			`bad.json: seed: -1 is not a non-negative integer`},
		{"not a corpus file", []byte(`{"hello": 1}`), `bad.json: format: missing`},
		{"other format", edited(t, func(m map[string]any) { m["format"] = "other" }), `bad.json: format: got string "other", want "idemcheck-corpus"`},
		{"future version", edited(t, func(m map[string]any) { m["version"] = 4 }), `bad.json: version: got number 4, this loader reads corpus format versions 1 to 3`},
		{"missing law", edited(t, func(m map[string]any) { delete(m, "law") }), `bad.json: law: missing or empty`},
		{"law of another property", edited(t, func(m map[string]any) { m["law"] = "monotonic" }), `bad.json: law: "monotonic" is not a law of single-credit`},
		{"law in a version 1 file", edited(t, func(m map[string]any) { m["version"] = 1 }), `bad.json: law: a version 1 file has no law`},
		{"caughtBy without a law", edited(t, func(m map[string]any) { obj(m["caughtBy"])["no-dedup"] = "single-credit" }),
			`bad.json: caughtBy.no-dedup: "single-credit" names no law`},
		{"scenario version", edited(t, func(m map[string]any) { obj(m["scenario"])["version"] = 9 }), `bad.json: scenario.version: got 9`},
		{"unknown property", edited(t, func(m map[string]any) { m["property"] = "no-such" }), `bad.json: property: "no-such" is not a known property`},
		{"property of the other kind", edited(t, func(m map[string]any) { m["property"] = "hlc-laws" }),
			`bad.json: property: "hlc-laws" judges projection scenarios, but the scenario is consumption`},
		{"unknown mutant", edited(t, func(m map[string]any) { obj(m["caughtBy"])["ghost"] = "single-credit/at-most-once" }),
			`bad.json: caughtBy.ghost: "ghost" is not a known mutant`},
		{"missing target", edited(t, func(m map[string]any) { delete(m, "target") }), `bad.json: target: missing or empty`},
		{"missing scenario", edited(t, func(m map[string]any) { delete(m, "scenario") }), `bad.json: scenario: missing`},
		{"syntax error", []byte("{\n  \"format\": \"idemcheck-corpus\",\n  \"version\": 1,,\n}"), `bad.json: line 3, column 16: invalid character ','`},
		{"trailing data", append(edited(t, func(map[string]any) {}), []byte("\n{}")...), `bad.json: line `},
		{"not an object", []byte(`[1]`), `bad.json: (top level): got an array, want an object`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := corpus.Parse("bad.json", c.data)
			if err == nil {
				t.Fatalf("accepted:\n%s", c.data)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, c.want)
			}
		})
	}
}

// LoadAny reads a bare scenario as well as a corpus file.
func TestLoadAnyReadsBareScenario(t *testing.T) {
	dir := t.TempDir()
	js, err := scenario.Marshal(smallCase().Scenario)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bare.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := corpus.LoadAny(path)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Bare || c.Scenario.Size() != smallCase().Scenario.Size() {
		t.Fatalf("bare=%t size=%d", c.Bare, c.Scenario.Size())
	}
	bad := strings.Replace(string(js), `"worker": "w1"`, `"worker": "w9"`, 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := corpus.LoadAny(path); err == nil || !strings.Contains(err.Error(), path+`: consumption.steps[1]: worker: "w9"`) {
		t.Fatalf("error %v does not name the file and the field", err)
	}
}

// LoadDir reports every bad file and still returns the good ones; hidden
// files (the temporaries of an interrupted write) are skipped.
func TestLoadDirReportsEachBadFile(t *testing.T) {
	dir := t.TempDir()
	good, _ := corpus.Encode(smallCase())
	files := map[string]string{"a.json": string(good), "b.json": "{", ".tmp-c.json-123": "{", "notes.txt": "x"}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases, err := corpus.LoadDir(dir)
	if len(cases) != 1 || cases[0].Path != filepath.Join(dir, "a.json") {
		t.Fatalf("loaded %d cases", len(cases))
	}
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "b.json")+": ") || strings.Contains(err.Error(), ".tmp-") {
		t.Fatalf("error %v", err)
	}
}

// A version 1 file — no law, caughtBy naming properties — still loads.
func TestLoadReadsVersion1(t *testing.T) {
	v1 := edited(t, func(m map[string]any) {
		m["version"] = 1
		delete(m, "law")
		obj(m["caughtBy"])["no-dedup"] = "single-credit"
	})
	c, err := corpus.Parse("v1.json", v1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != 1 || c.Law != "" || c.LawID() != "single-credit" || c.CaughtBy["no-dedup"] != "single-credit" {
		t.Fatalf("version 1 case read as %+v", c)
	}
}

// A case written before nothing-lost/healthy-credited was renamed
// nothing-lost/healthy-applied loads, read under the new name.
func TestFormerLawNamesLoad(t *testing.T) {
	data := edited(t, func(m map[string]any) {
		m["property"], m["law"] = "nothing-lost", "healthy-credited"
		m["caughtBy"] = map[string]any{"failed-claim-stays-locked": "nothing-lost/healthy-credited"}
	})
	c, err := corpus.Parse("old.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if c.LawID() != "nothing-lost/healthy-applied" || c.CaughtBy["failed-claim-stays-locked"] != "nothing-lost/healthy-applied" {
		t.Errorf("law %q, caughtBy %v: want both nothing-lost/healthy-applied", c.LawID(), c.CaughtBy)
	}
}
