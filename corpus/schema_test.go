package corpus_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/corpus"
	"github.com/idemcheck/idemcheck/faults/scenario"
)

// TestSchemaMatchesTypes keeps schema.json in step with the Go types: every
// object definition lists exactly the type's JSON fields, closes itself to
// others, and requires only fields the encoder always writes.
func TestSchemaMatchesTypes(t *testing.T) {
	data, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Schema string                     `json:"$schema"`
		Defs   map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	if schema.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema is %q", schema.Schema)
	}
	types := map[string]reflect.Type{
		"case":           reflect.TypeFor[corpus.Case](),
		"scenario":       reflect.TypeFor[scenario.Scenario](),
		"consumption":    reflect.TypeFor[scenario.Consumption](),
		"config":         reflect.TypeFor[scenario.Config](),
		"node":           reflect.TypeFor[scenario.Node](),
		"worker":         reflect.TypeFor[scenario.Worker](),
		"event":          reflect.TypeFor[scenario.Event](),
		"step":           reflect.TypeFor[scenario.Step](),
		"projection":     reflect.TypeFor[scenario.Projection](),
		"projectionStep": reflect.TypeFor[scenario.ProjectionStep](),
		"replica":        reflect.TypeFor[scenario.Replica](),
	}
	for name, typ := range types {
		raw, ok := schema.Defs[name]
		if !ok {
			t.Errorf("schema has no $defs/%s for %v", name, typ)
			continue
		}
		var def struct {
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Required             []string                   `json:"required"`
			Properties           map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(raw, &def); err != nil {
			t.Fatalf("$defs/%s: %v", name, err)
		}
		if def.AdditionalProperties == nil || *def.AdditionalProperties {
			t.Errorf("$defs/%s: additionalProperties must be false: the loader rejects unknown fields", name)
		}
		fields, always := jsonFieldsOf(typ)
		var props []string
		for p := range def.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		if !slices.Equal(props, fields) {
			t.Errorf("$defs/%s lists %v, type %v has %v", name, props, typ, fields)
		}
		for _, r := range def.Required {
			if !slices.Contains(always, r) {
				t.Errorf("$defs/%s requires %q, which the encoder may omit", name, r)
			}
		}
	}
}

// jsonFieldsOf returns the JSON names of typ's fields, sorted, and those
// written even when empty.
func jsonFieldsOf(typ reflect.Type) (all, always []string) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			// An embedded struct (the retry policy, broker.Policy) is
			// encoded at this level.
			a, w := jsonFieldsOf(f.Type)
			all, always = append(all, a...), append(always, w...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			always = append(always, name)
		}
	}
	slices.Sort(all)
	return all, always
}
