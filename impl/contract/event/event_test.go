package event

import (
	"encoding/json"
	"testing"

	"github.com/idemcheck/idemcheck/internal/hunt"

	"pgregory.net/rapid"
)

// Encode writes exactly what encoding/json writes, whatever the strings
// hold: plain ones take the short way, the rest go through encoding/json.
func TestEncodeIsEncodingJSONs(t *testing.T) {
	str := rapid.OneOf(rapid.String(), rapid.StringMatching(`[a-z0-9-]{0,12}`), rapid.SampledFrom([]string{"", "acme", `a"b`, `a\b`, "<&>", "\u2028", "\x00", "é"}))
	hunt.Check(t, func(t *rapid.T) {
		e := OrderPaid{EventID: str.Draw(t, "id"), OccurredAtMs: rapid.Int64().Draw(t, "at"), Tenant: str.Draw(t, "tenant"),
			OrderID: str.Draw(t, "order"), UserID: str.Draw(t, "user"), AmountCents: rapid.Int64().Draw(t, "amount")}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Encode(); string(got) != string(want) {
			t.Fatalf("Encode = %s, encoding/json = %s", got, want)
		}
	})
}
