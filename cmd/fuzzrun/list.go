package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/idemcheck/idemcheck/internal/consumerharness"

	"github.com/idemcheck/idemcheck/impl/system"
)

// listJSON is the fuzzrun list -json output.
type listJSON struct {
	Properties []propertyJSON `json:"properties"`
	Targets    []targetJSON   `json:"targets"`
	// ConsumerLaws are the laws fuzzrun consumer NAME judges (consumerharness.Laws).
	ConsumerLaws []lawJSON `json:"consumerLaws"`
}

type propertyJSON struct {
	Name      string    `json:"name"`
	Invariant int       `json:"invariant"`
	Kind      string    `json:"kind"`
	Doc       string    `json:"doc"`
	Laws      []lawJSON `json:"laws"`
}

type lawJSON struct {
	Name string `json:"name"`
	Doc  string `json:"doc"`
}

type targetJSON struct {
	Name     string `json:"name"`
	Mutant   bool   `json:"mutant"`
	KilledBy string `json:"killedBy,omitempty"`
	Bug      string `json:"bug,omitempty"`
}

// runList lists the selected properties and every target.
func runList(o *options, stdout io.Writer) int {
	if o.json {
		var l listJSON
		for _, p := range o.props {
			pj := propertyJSON{Name: p.Name, Invariant: p.Invariant, Kind: string(p.Kind), Doc: p.Doc}
			for _, law := range p.Laws {
				pj.Laws = append(pj.Laws, lawJSON{Name: law.Name, Doc: law.Doc})
			}
			l.Properties = append(l.Properties, pj)
		}
		for _, name := range targetNames() {
			t, _ := system.Lookup(name) // external targets are listed, not opened
			l.Targets = append(l.Targets, targetJSON{Name: name, Mutant: t.Mutant, KilledBy: t.KilledBy, Bug: t.Bug})
		}
		for _, law := range consumerharness.Laws {
			l.ConsumerLaws = append(l.ConsumerLaws, lawJSON{Name: law, Doc: consumerharness.LawDoc(law)})
		}
		return writeJSONOr(stdout, l, exitOK)
	}
	fmt.Fprintln(stdout, "properties:")
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, p := range o.props {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\n", p.Name, p.Invariant, p.Kind, p.Doc)
		for _, l := range p.Laws {
			fmt.Fprintf(tw, "    /%s\t\t\t%s\n", l.Name, l.Doc)
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\ntargets (-target):")
	for _, name := range targetNames() {
		fmt.Fprintf(stdout, "  %s\n", describeTarget(name))
	}
	listBrokers(stdout)
	listConsumers(stdout)
	return exitOK
}
