package lineproc

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestArgv(t *testing.T) {
	if argv, err := Argv("x", "  node  inbox.js\t-v "); err != nil || !slices.Equal(argv, []string{"node", "inbox.js", "-v"}) {
		t.Errorf("Argv: %q, %v", argv, err)
	}
	if _, err := Argv("procstore", " \t"); err == nil || err.Error() != "procstore: empty command" {
		t.Errorf("Argv of an empty line: %v", err)
	}
}

func TestMarshalIsOneLine(t *testing.T) {
	b, err := Marshal(map[string]any{"sql": "SELECT '<a>'\n&"})
	if err != nil || string(b) != `{"sql":"SELECT '<a>'\n&"}` {
		t.Errorf("Marshal: %s, %v", b, err)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("Marshal of a func did not fail")
	}
}

func TestDecodeAnswer(t *testing.T) {
	type answer struct {
		Envelope
		N *int `json:"n"`
	}
	var ok answer
	if err := DecodeAnswer([]byte(`{"id":3,"ok":true,"n":2}`), 3, &ok, &ok.Envelope); err != nil || !ok.OK || ok.N == nil || *ok.N != 2 {
		t.Errorf("a good answer: %+v, %v", ok, err)
	}
	var refused answer
	if err := DecodeAnswer([]byte(`{"id":3,"error":"no","kind":"stale"}`), 3, &refused, &refused.Envelope); err != nil || refused.OK || refused.Kind != "stale" {
		t.Errorf("an error answer: %+v, %v", refused, err)
	}
	for line, want := range map[string]string{
		`[1]`:                            "not a JSON object",
		`{"id":"x"}`:                     "answered garbage (",
		`{"ok":true}`:                    "without an id",
		`{"id":2,"ok":true}`:             "answered id 2 to request 3",
		`{"id":3,"ok":true,"error":"x"}`: "both ok and error",
		`{"id":3}`:                       "neither",
	} {
		var r answer
		if err := DecodeAnswer([]byte(line), 3, &r, &r.Envelope); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeAnswer(%s): %v, want an error with %q", line, err, want)
		}
	}
}

func TestWithStderr(t *testing.T) {
	p := &Proc{stderr: &tail{max: 100}}
	_, _ = p.stderr.Write([]byte("boom\n"))
	base := errors.New("hung")
	if got := p.WithStderr(base); got.Error() != "hung; its stderr ends with: boom" || !errors.Is(got, base) {
		t.Errorf("WithStderr: %v", got)
	}
	if got := p.WithStderr(DeathError("died: x")); got.Error() != "died: x" {
		t.Errorf("WithStderr of a death: %v", got)
	}
	var none *Proc
	if got := none.WithStderr(base); got != base {
		t.Errorf("WithStderr of no process: %v", got)
	}
}
