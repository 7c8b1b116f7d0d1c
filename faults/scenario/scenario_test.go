package scenario

import (
	"strings"
	"testing"
)

const valid = `{"version":1,"kind":"consumption","consumption":{
 "config":{"topic":"orders","consumers":["ledger"],"nodes":[{"name":"a","skewMs":0}],
  "workers":[{"name":"w1","consumer":"ledger","node":"a"}],
  "maxAttempts":3,"backoffMs":100,"maxBackoffMs":400,"ackTimeoutMs":1000,"leaseMs":100,"retentionMs":60000},
 "events":[{"id":"e1","tenant":"","orderId":"o1","userId":"u1","amountCents":100}],
 "steps":[{"op":"produce","event":0},{"op":"deliver","worker":"w1"}]}}`

func TestRoundTripIsCanonical(t *testing.T) {
	s, err := Unmarshal([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Marshal(s)
	s2, err := Unmarshal(a)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Marshal(s2)
	if string(a) != string(b) {
		t.Fatalf("not canonical:\n%s\n%s", a, b)
	}
	if s.Size() != 3 {
		t.Fatalf("size %d, want 3", s.Size())
	}
}

func TestErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{`"version":1`, `"version":2`, "version: got 2"},
		{`"kind":"consumption"`, `"kind":"nope"`, "kind:"},
		{`"worker":"w1"}]`, `"worker":"w9"}]`, `consumption.steps[1]: worker: "w9" is not a listed worker`},
		{`"op":"produce","event":0`, `"op":"produce","event":5`, "consumption.steps[0]: event: 5 is out of range"},
		{`"op":"deliver"`, `"op":"teleport"`, `consumption.steps[1]: op: "teleport" is not a known step`},
		{`"leaseMs":100`, `"leaseMs":0`, "consumption.config.leaseMs: must be positive"},
		{`"consumer":"ledger","node"`, `"consumer":"mail","node"`, `consumption.config.workers[0].consumer: "mail"`},
		{`"amountCents":100}`, `"amountCents":100,"fate":"sometimes"}`, "consumption.events[0].fate"},
		{`"topic":"orders"`, `"topic":"orders","colour":1`, `unknown field "colour"`},
	} {
		in := strings.Replace(valid, tc.from, tc.to, 1)
		if in == valid {
			t.Fatalf("test case %q does not apply", tc.from)
		}
		_, err := Unmarshal([]byte(in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: error %v, want it to mention %q", tc.from, tc.to, err, tc.want)
		}
	}
}
