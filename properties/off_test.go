package properties_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/faults/scenario"
	"github.com/idemcheck/idemcheck/impl/system"
	"github.com/idemcheck/idemcheck/properties"
)

// A law switched off is judged by nobody, and every verdict and report
// says so with the reason given.
func TestLawSwitchedOffIsRecordedWithItsReason(t *testing.T) {
	m, _ := system.Lookup("hlc-refuses-delayed")
	p, _ := properties.ByName("hlc-laws")
	const id, reason = "hlc-laws/refuse-only-beyond-max-offset", "our guard is symmetric by design; tracked as ADR-12"
	caught := properties.Hunt(m, properties.HuntOptions{Kind: scenario.KindProjection, Properties: []properties.Property{p}, Checks: 500, Seed: 1})
	if !caught.Failed || caught.Law != id {
		t.Fatalf("with the law on, the mutant was not caught by it: %+v", caught.Law)
	}
	_, verdicts, err := properties.Judge(caught.Scenario, m, []properties.Property{p}, properties.JudgeOptions{Off: map[string]string{id: reason}})
	if err != nil {
		t.Fatal(err)
	}
	v := verdicts[0]
	if !v.Pass || v.Off["refuse-only-beyond-max-offset"] != reason {
		t.Fatalf("verdict with the law off: pass=%v off=%v", v.Pass, v.Off)
	}
	if r := properties.Report(v, nil, properties.ReportOptions{}); !strings.Contains(r, "switched off: "+reason) {
		t.Fatalf("the report does not give the reason:\n%s", r)
	}
	// Through the per-property entry point: the law's subtest is skipped
	// with the reason, the other laws still run and pass.
	properties.CheckProperty(t, m, "hlc-laws", properties.Options{Off: map[string]string{id: reason}, Checks: 100})
}
