package lineproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Argv splits a command line on white space: "node inbox.js" is argv
// ["node", "inbox.js"]. There is no quoting; anything fancier is wrapped
// in a script. who names the package in the error of an empty line.
func Argv(who, line string) ([]string, error) {
	argv := strings.Fields(line)
	if len(argv) == 0 {
		return nil, errors.New(who + ": empty command")
	}
	return argv, nil
}

// Marshal encodes v on one line (json escapes any newline inside), HTML
// characters as they are.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Envelope is what every answer of a protocol whose requests are numbered
// (procstore's, procparts') carries: the request's id, and either ok or
// an error of some kind. A protocol's answer type embeds it.
type Envelope struct {
	ID    *int64 `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Kind  string `json:"kind"`
}

// DecodeAnswer decodes the answer line to request id into r, whose
// Envelope is env, and checks that it is one: one JSON object, the right
// id, and ok or an error, never both.
func DecodeAnswer(line []byte, id int64, r any, env *Envelope) error {
	if !ValidJSONObject(line) {
		return fmt.Errorf("answered garbage (not a JSON object): %q", Clip(line))
	}
	if err := json.Unmarshal(line, r); err != nil {
		return fmt.Errorf("answered garbage (%v): %q", err, Clip(line))
	}
	switch {
	case env.ID == nil:
		return fmt.Errorf("answered without an id: %q", Clip(line))
	case *env.ID != id:
		return fmt.Errorf("answered id %d to request %d: answers must come in order, one per request", *env.ID, id)
	case env.OK && env.Error != "":
		return fmt.Errorf("answered both ok and error: %q", Clip(line))
	case !env.OK && env.Error == "":
		return fmt.Errorf("answered neither \"ok\":true nor an error: %q", Clip(line))
	}
	return nil
}
