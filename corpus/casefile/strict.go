package casefile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// checkShape walks a decoded JSON value (decoded with UseNumber) alongside
// the Go type it will be decoded into, and reports the first unknown field
// or value of the wrong JSON type by its full path, indices included:
// "scenario.consumption.steps[3].wrker: unknown field". encoding/json's own
// errors name neither the index nor, for unknown fields, the path, and it
// matches keys case-insensitively; this walk is exact.
func checkShape(path string, v any, t reflect.Type) error {
	if t.Kind() == reflect.Pointer {
		if v == nil {
			return nil
		}
		t = t.Elem()
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // the type decodes itself (json.RawMessage, custom types)
	}
	if v == nil {
		switch t.Kind() {
		case reflect.Slice, reflect.Map, reflect.Interface:
			return nil
		}
		return fmt.Errorf("%s: null, want %s", orRoot(path), want(t))
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return mismatch(path, v, t)
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(obj) {
			f, ok := fields[k]
			if !ok {
				return fmt.Errorf("%s: unknown field (known fields: %s)", join(path, k), strings.Join(sortedFieldNames(fields), ", "))
			}
			if err := checkShape(join(path, k), obj[k], f); err != nil {
				return err
			}
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return mismatch(path, v, t)
		}
		for i, e := range arr {
			if err := checkShape(fmt.Sprintf("%s[%d]", path, i), e, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return mismatch(path, v, t)
		}
		for _, k := range sortedKeys(obj) {
			if err := checkShape(mapKey(path, k), obj[k], t.Elem()); err != nil {
				return err
			}
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			return mismatch(path, v, t)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return mismatch(path, v, t)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch(path, v, t)
		}
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return fmt.Errorf("%s: %s is not an integer that fits %d bits", orRoot(path), n, t.Bits())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch(path, v, t)
		}
		if _, err := strconv.ParseUint(string(n), 10, t.Bits()); err != nil {
			return fmt.Errorf("%s: %s is not a non-negative integer that fits %d bits", orRoot(path), n, t.Bits())
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			return mismatch(path, v, t)
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// jsonFields maps the JSON names of t's exported, encoded fields to their
// types. The fields of an embedded struct with no JSON name of its own
// (a retry policy, broker.Policy) are encoded at t's level, as
// encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for n, ft := range jsonFields(f.Type) {
				if _, shadowed := out[n]; !shadowed {
					out[n] = ft
				}
			}
			continue
		}
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func sortedFieldNames(m map[string]reflect.Type) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func mismatch(path string, v any, t reflect.Type) error {
	return fmt.Errorf("%s: got %s, want %s", orRoot(path), describe(v), want(t))
}

func describe(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case json.Number:
		return "number " + string(x)
	case bool:
		return fmt.Sprintf("%t", x)
	}
	return "null"
}

func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "an integer"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// mapKey names a map entry: dotted when the key reads as a name, quoted in
// brackets otherwise.
func mapKey(path, key string) string {
	if plainKey.MatchString(key) {
		return join(path, key)
	}
	return fmt.Sprintf("%s[%q]", path, key)
}

func orRoot(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}
