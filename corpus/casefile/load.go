package casefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck/faults/scenario"
)

// wire is Case as decoded: the scenario is kept raw so that scenario.Unmarshal,
// which validates it, does the decoding.
type wire struct {
	Format   string            `json:"format"`
	Version  int               `json:"version"`
	Property string            `json:"property"`
	Law      string            `json:"law"`
	Target   string            `json:"target"`
	Summary  string            `json:"summary"`
	Schema   string            `json:"schema"`
	CaughtBy map[string]string `json:"caughtBy"`
	Seed     uint64            `json:"seed"`
	Trace    []string          `json:"trace"`
	Scenario json.RawMessage   `json:"scenario"`
	Consumer json.RawMessage   `json:"consumer"`
}

// Names checks a scenario case's property, law and caught mutants against
// what a harness knows (package corpus holds them to the properties and
// mutants of this repository); nil checks nothing.
type Names func(*Case) error

// Load reads and validates one corpus file. Every error names the file and
// the field: `corpus/cases/x.json: scenario.consumption.steps[3]: worker:
// "w9" is not a listed worker`.
func Load(path string, names Names) (*Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, names)
}

// Parse validates the contents of a corpus file; name prefixes every error.
func Parse(name string, data []byte, names Names) (*Case, error) {
	c, err := parse(data, names)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.Path = name
	return c, nil
}

// LoadAny reads a corpus file or a bare scenario (the scenario.Marshal form,
// as a person might write by hand), telling them apart by the corpus file's
// "format" field. A bare scenario comes back as a Case with Bare set.
func LoadAny(path string, names Names) (*Case, error) {
	data, v, err := readValue(path)
	if err != nil {
		return nil, err
	}
	if obj, ok := v.(map[string]any); ok && obj["format"] == nil && obj["kind"] != nil {
		s, err := parseScenario("", v, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &Case{Scenario: s, Path: path, Bare: true}, nil
	}
	return Parse(path, data, names)
}

// LoadDir loads every corpus file (*.json, not hidden) in dir, in name
// order. It returns the cases that loaded and, joined, an error for each
// file that did not; the temporary files of an interrupted Write are hidden
// and skipped.
func LoadDir(dir string, names Names) ([]*Case, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var (
		cases []*Case
		errs  []error
	)
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || filepath.Ext(e.Name()) != ".json" {
			continue
		}
		c, err := Load(filepath.Join(dir, e.Name()), names)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cases = append(cases, c)
	}
	return cases, errors.Join(errs...)
}

func parse(data []byte, names Names) (*Case, error) {
	v, err := decodeValue(data)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("(top level): got %s, want an object", describe(v))
	}
	switch f := obj["format"]; {
	case f == nil:
		return nil, fmt.Errorf("format: missing; a corpus file is an object with \"format\": %q", Format)
	case f != Format:
		return nil, fmt.Errorf("format: got %s, want %q", describe(f), Format)
	}
	n, ok := obj["version"].(json.Number)
	version, err := strconv.Atoi(string(n))
	if !ok || err != nil || version < 1 || version > Version {
		return nil, fmt.Errorf("version: got %s, this loader reads corpus format versions 1 to %d", describe(obj["version"]), Version)
	}
	if _, has := obj["law"]; has && version < 2 {
		return nil, fmt.Errorf("law: a version 1 file has no law; write version 2")
	}
	if err := checkShape("", v, reflect.TypeFor[Case]()); err != nil {
		return nil, err
	}
	var w wire
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, err // checkShape has already named any field at fault
	}
	c := &Case{Format: w.Format, Version: w.Version, Property: w.Property, Law: w.Law, Target: w.Target, Summary: w.Summary,
		Schema: w.Schema, CaughtBy: w.CaughtBy, Seed: w.Seed, Trace: w.Trace}
	if w.Consumer != nil {
		return parseConsumer(c, w)
	}
	if w.Scenario == nil {
		return nil, fmt.Errorf("scenario: missing")
	}
	if c.Scenario, err = parseScenario("scenario", obj["scenario"], w.Scenario); err != nil {
		return nil, err
	}
	if c.Target == "" {
		return nil, fmt.Errorf("target: missing or empty")
	}
	if names != nil {
		if err := names(c); err != nil {
			return nil, err
		}
	}
	if c.Version >= 2 && c.Law == "" {
		return nil, fmt.Errorf("law: missing or empty (version %d files name the law broken)", c.Version)
	}
	return c, nil
}

// parseScenario validates a scenario, already decoded as v, from its raw
// bytes; path prefixes the errors.
func parseScenario(path string, v any, raw []byte) (*scenario.Scenario, error) {
	if err := checkShape(path, v, reflect.TypeFor[scenario.Scenario]()); err != nil {
		return nil, err
	}
	s, err := scenario.Unmarshal(raw)
	if err != nil {
		if path == "" {
			return nil, err
		}
		return nil, fmt.Errorf("%s.%w", path, err)
	}
	return s, nil
}

// readValue reads the file at path and decodes it (see decodeValue); a
// decoding error names the file.
func readValue(path string) ([]byte, any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	v, err := decodeValue(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, v, nil
}

// decodeValue decodes one JSON value with exact numbers, naming the line
// and column of a syntax error.
func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, JSONError(data, err)
	}
	if dec.More() {
		line, col := position(data, dec.InputOffset())
		return nil, fmt.Errorf("line %d, column %d: trailing data after the top-level object", line, col)
	}
	return v, nil
}

// CheckJSON decodes data as one JSON value and checks its shape against
// the Go type t exactly, as Load checks a corpus file: the first unknown
// field, or value of the wrong JSON type, is named by its full path
// ("steps[2].worker: got string \"w9\", want an integer"), and an empty or
// truncated file says so.
func CheckJSON(data []byte, t reflect.Type) error {
	v, err := decodeValue(data)
	if err != nil {
		return err
	}
	return checkShape("", v, t)
}

// JSONError words an error of decoding data as JSON for a person: an
// empty file, a file that ends before its JSON does (truncated), or a
// syntax error at a line and column, instead of encoding/json's "EOF",
// "unexpected EOF" or byte offset. Other errors come back as they are.
func JSONError(data []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF) && len(bytes.TrimSpace(data)) == 0:
		return errors.New("the file is empty: it holds no JSON")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		line, col := position(data, int64(len(data)))
		return fmt.Errorf("the JSON ends early, at line %d, column %d: the file is cut short (truncated) or its brackets do not close", line, col)
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included.
		line, col := position(data, se.Offset-1)
		return fmt.Errorf("line %d, column %d: %v", line, col, err)
	}
	return err
}

// position gives the 1-based line and column of the byte at offset.
func position(data []byte, offset int64) (line, col int) {
	offset = max(0, min(offset, int64(len(data))))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// parseConsumer checks a consumer-level case (version 3). Its scenario is
// kept raw: package consumertest decodes and validates it when it replays
// the case against the consumer named by Target.
func parseConsumer(c *Case, w wire) (*Case, error) {
	switch {
	case c.Version < 3:
		return nil, fmt.Errorf("consumer: consumer-level cases are version 3; this file says %d", c.Version)
	case w.Scenario != nil:
		return nil, fmt.Errorf("scenario: a consumer-level case holds its scenario under \"consumer\" only")
	case c.Property != ConsumerProperty:
		return nil, fmt.Errorf("property: got %q, a consumer-level case says %q", c.Property, ConsumerProperty)
	case c.Law == "":
		return nil, fmt.Errorf("law: missing or empty (version %d files name the law broken)", c.Version)
	case c.Target == "":
		return nil, fmt.Errorf("target: missing or empty")
	case len(c.CaughtBy) > 0:
		return nil, fmt.Errorf("caughtBy: a consumer-level case names no mutant")
	}
	var obj map[string]any
	if err := json.Unmarshal(w.Consumer, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("consumer: want an object")
	}
	c.Consumer = w.Consumer
	return c, nil
}

// LoadConsumer reads the consumer-level scenario, still encoded, of a
// consumer-level case or of a bare consumer scenario (JSON with no
// "format" field). A corpus file is held to the format as Load holds it.
func LoadConsumer(path string) (json.RawMessage, error) {
	data, v, err := readValue(path)
	if err != nil {
		return nil, err
	}
	if obj, ok := v.(map[string]any); ok && obj["format"] == nil {
		return data, nil
	}
	c, err := Parse(path, data, nil)
	if err != nil {
		return nil, err
	}
	if c.Consumer == nil {
		return nil, fmt.Errorf("%s: a corpus file, but not a consumer-level case (no \"consumer\" field)", path)
	}
	return c.Consumer, nil
}
