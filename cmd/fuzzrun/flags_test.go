package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/properties"
)

// Every usage error exits 2 with a message naming the flag and the value.
func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-duration", "abc"}, `fuzzrun: -duration: "abc" is not a duration`},
		{[]string{"-duration", "-5s"}, `fuzzrun: -duration: "-5s" is not a duration`},
		{[]string{"-checks", "many"}, `fuzzrun: -checks: "many" is not a whole number`},
		{[]string{"-checks", "-1"}, `fuzzrun: -checks: -1 is negative`},
		{[]string{"-seed", "-3"}, `fuzzrun: -seed: "-3" is not an unsigned 64-bit integer`},
		{[]string{"-workers", "0"}, `fuzzrun: -workers: 0 is not a positive number`},
		{[]string{"-workers", "9999"}, `fuzzrun: -workers: 9999 is more than 256`},
		{[]string{"-target", "nope"}, `fuzzrun: -target: "nope" is not a target; valid targets: reference, `},
		{[]string{"-property", "nope*"}, `fuzzrun: -property: "nope*" matches no property; the properties are single-credit`},
		{[]string{"-property", "[x"}, `fuzzrun: -property: "[x" is not a valid glob`},
		{[]string{"-frobnicate"}, `fuzzrun: -frobnicate: fuzzrun campaign has no such flag`},
		{[]string{"-duration"}, `fuzzrun: -duration: needs a value`},
		{[]string{"-json=maybe"}, `fuzzrun: -json: "maybe" is not true or false`},
		{[]string{"extra"}, `fuzzrun: "extra" is not a command; the commands are campaign, consumer, explore, merge, broker, mutants, replay, list`},
		{[]string{"campaign", "extra"}, `fuzzrun: unexpected argument "extra": fuzzrun campaign takes flags only`},
		{[]string{"replay"}, `fuzzrun: fuzzrun replay needs FILE`},
		{[]string{"replay", "a.json", "b.json"}, `fuzzrun: unexpected argument "b.json": fuzzrun replay takes one FILE`},
		{[]string{"consumer"}, `fuzzrun: fuzzrun consumer needs NAME|SCHEME:ARG`},
		{[]string{"campaign", "-depth", "3"}, `fuzzrun: -depth: fuzzrun campaign has no such flag; it is a flag of fuzzrun explore`},
		{[]string{"list", "-duration", "3s"}, `fuzzrun: -duration: fuzzrun list has no such flag; it is a flag of fuzzrun campaign, fuzzrun consumer, fuzzrun explore and fuzzrun broker`},
		{[]string{"mutants", "-target", "no-dedup"}, `fuzzrun: -target: fuzzrun mutants has no such flag`},
		{[]string{"mutants", "-off", "hlc-laws/monotonic=a"}, `fuzzrun: -off: fuzzrun mutants has no such flag; it is a flag of fuzzrun campaign`},
		{[]string{"replay", "x.json", "-corpus", ""}, `fuzzrun: -corpus: fuzzrun replay has no such flag`},
		{[]string{"explore", "-checks", "3"}, `fuzzrun: -checks: fuzzrun explore has no such flag`},
		{[]string{"explore", "-max-memory", "lots"}, `fuzzrun: -max-memory: "lots" is not a memory size (e.g. 512MB, 4GB, 1.5GiB)`},
		{[]string{"explore", "-depth", "0"}, `fuzzrun: -depth: "0" is not a depth from 1 to`},
		{[]string{"consumer", "adr", "-max-memory", "1GB"}, `fuzzrun: -max-memory: fuzzrun consumer runs one hunt at a time; -max-memory applies with -explore`},
		{[]string{"consumer", "adr", "-explore", "-replay", "x.json"}, `fuzzrun: -replay and -explore are different modes (-replay FILE plays one saved case, -explore model-checks); give one of them`},
		{[]string{"consumer", "adr", "-target", "sqlite"}, `fuzzrun: -target: fuzzrun consumer has no such flag`},
		{[]string{"consumer", "adr", "-v"}, `fuzzrun: -v: fuzzrun consumer has no such flag`},
		{[]string{"broker", "nats", "-html", "x.html"}, `fuzzrun: -html: fuzzrun broker has no such flag`},
		{[]string{"campaign", "-worker-index", "1"}, `fuzzrun: -worker-index: fuzzrun campaign has no such flag (see fuzzrun campaign -h)`},
		{[]string{"help", "nope"}, `fuzzrun: help: "nope" is not a command`},
		{[]string{"-weights", "crashes=0"}, `fuzzrun: -weights: "crashes" is not a kind of step; the kinds are run, deliver, produce, duplicate, reorder, crash,`},
		{[]string{"mutants", "-weights", "crash=-1"}, `fuzzrun: -weights: crash=-1: a weight is a whole number from 0 to 1000`},
		{[]string{"-weights", "crash"}, `fuzzrun: -weights: "crash" is not KIND=WEIGHT (e.g. crash=0,skew=3)`},
		{[]string{"-without", "crash"}, `fuzzrun: -without: fuzzrun campaign has no such flag (see fuzzrun campaign -h)`},
		{[]string{"explore", "-weights", "crash=0"}, `fuzzrun: -weights: fuzzrun explore has no such flag; it is a flag of fuzzrun campaign, fuzzrun consumer and fuzzrun mutants`},
		{[]string{"consumer", "adr", "-weights", "skew=1"}, `fuzzrun: -weights: "skew" is not a kind of step; the kinds are run, fail, crash, advance, duplicate, replay`},
		{[]string{"consumer", "adr", "-explore", "-weights", "crash=0"}, `fuzzrun: -weights: weighs the steps a campaign draws; -explore tries every schedule and -replay plays a saved one`},
		{[]string{"consumer", "adr", "-events", "2"}, `fuzzrun: -events: bounds a consumer's model check; give -explore`},
		{[]string{"consumer", "adr", "-explore", "-seed", "3"}, `fuzzrun: -seed: means nothing with fuzzrun consumer -explore`},
		{[]string{"explore", "-copies", "3"}, `fuzzrun: -copies: needs -projection`},

		{[]string{"-duration", "0"}, `fuzzrun: -duration: 0 (no time limit) needs -checks`},
		{[]string{"-target", "exec-hlc:"}, `fuzzrun: -target: "exec-hlc:" cannot be used: target exec-hlc:: procparts: empty command`},
		{[]string{"-target", "exec-projector:/nonexistent/projector"}, `fuzzrun: -target: "exec-projector:/nonexistent/projector" cannot be used: target exec-projector:/nonexistent/projector: procparts: projector implementation "/nonexistent/projector" failed on request 1 (hello): could not start`},
		{[]string{"-off", "hlc-laws/physical-bound"}, `fuzzrun: -off: "hlc-laws/physical-bound" is not LAW=REASON`},
		{[]string{"-off", "hlc-laws/no-such-law=why"}, `fuzzrun: -off: "hlc-laws/no-such-law" is not a law; laws are named property/law`},
		{[]string{"-off", "physical-bound=why"}, `fuzzrun: -off: "physical-bound" is not a law`},
		{[]string{"-off", "hlc-laws/physical-bound= "}, `fuzzrun: -off: hlc-laws/physical-bound has no reason`},
		{[]string{"-off", "hlc-laws/monotonic=a", "-off", "hlc-laws/monotonic=b"}, `fuzzrun: -off: hlc-laws/monotonic is switched off twice`},
		{[]string{"replay", "no/such/file.json"}, `fuzzrun: replay: open no/such/file.json`},

		{[]string{"-target", "hlc-no-merge", "-property", "single-credit", "-corpus", "", "-html", ""}, `fuzzrun: -target: "hlc-no-merge" plays no scenario the selected properties judge`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := fuzzrun(t, c.args...)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitUsage, r.stderr)
			}
			if !strings.HasPrefix(r.stderr, c.want) {
				t.Fatalf("stderr:\n%s\nwant it to start with:\n%s", r.stderr, c.want)
			}
		})
	}
}

// fuzzrun -h lists the commands (not the hidden worker); each command's -h
// lists its own flags only.
func TestHelp(t *testing.T) {
	r := fuzzrun(t, "-h")
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, "fuzzrun -h", r.stdout, "campaign", "consumer NAME|SCHEME:ARG", "explore", "broker BROKER[:CONFIG]", "mutants", "replay FILE", "list", "-tags servers", "exit status")
	if strings.Contains(r.stdout, "worker") || strings.Contains(r.stdout, "-duration") {
		t.Errorf("fuzzrun -h shows the hidden worker or a command's flag:\n%s", r.stdout)
	}
	for _, c := range commands {
		if c.hidden {
			continue
		}
		for _, args := range [][]string{{c.name, "-h"}, {"help", c.name}} {
			r := fuzzrun(t, args...)
			if r.code != exitOK {
				t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
			}
			mustContain(t, c.name+" -h", r.stdout, "usage: fuzzrun "+c.name, "exit status")
			own := c.flags(newFlags()).names
			for _, f := range own {
				mustContain(t, c.name+" -h", r.stdout, "  -"+f+" ")
			}
			// No flag of another command.
			for _, o := range commands {
				for _, f := range o.flags(newFlags()).names {
					if !slices.Contains(own, f) && strings.Contains(r.stdout, "\n  -"+f+" ") {
						t.Errorf("fuzzrun %s -h lists -%s, not one of its flags", c.name, f)
					}
				}
			}
		}
	}
	mustContain(t, "explore -h", fuzzrun(t, "explore", "-h").stdout, "-projection", "-copies N", "-history H")
	mustContain(t, "broker -h", fuzzrun(t, "broker", "-h").stdout, "go run -tags servers ./cmd/fuzzrun broker")
	mustContain(t, "campaign -h", fuzzrun(t, "campaign", "-h").stdout, "-weights K=N", "-swarm", "crash=1", "reorder=3", "cleanup-reclaim=1")
}

func TestList(t *testing.T) {
	r := fuzzrun(t, "list")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, p := range properties.All() {
		mustContain(t, "-list", r.stdout, p.Name)
	}
	mustContain(t, "-list", r.stdout, "reference", "no-dedup", "mutant, killed by single-credit")
}

func TestListJSONHonoursProperty(t *testing.T) {
	r := fuzzrun(t, "list", "-json", "-property", "hlc-*,fencing")
	l := decode[listJSON](t, r)
	var names []string
	for _, p := range l.Properties {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "fencing,hlc-laws" {
		t.Fatalf("properties %v", names)
	}
	if len(l.Targets) < 2 || l.Targets[0].Name != "reference" || l.Targets[0].Mutant {
		t.Fatalf("targets %+v", l.Targets)
	}
}

func TestShareAndSeeds(t *testing.T) {
	var sum int64
	for w := range 3 {
		sum += share(10, 3, w)
	}
	if sum != 10 || share(10, 3, 0) != 4 || share(10, 3, 2) != 3 || share(0, 3, 1) != 0 {
		t.Fatalf("share splits 10 over 3 as %d %d %d", share(10, 3, 0), share(10, 3, 1), share(10, 3, 2))
	}
	seen := map[uint64]bool{}
	for w := range 4 {
		for k := range 100 {
			s := huntSeed(7, w, 4, k)
			if s == 0 || seen[s] {
				t.Fatalf("seed %d of worker %d hunt %d is zero or repeated", s, w, k)
			}
			seen[s] = true
		}
	}
	// Pinned: a campaign's seeds are fixed by its base seed, in every
	// process and every release, or -seed would not reproduce a campaign.
	if got := huntSeed(7, 1, 4, 3); got != 489215147674969543 {
		t.Fatalf("huntSeed(7, 1, 4, 3) = %d, want 489215147674969543", got)
	}
	if got := huntSeed(8, 1, 4, 3); got != 14415425345905102346 {
		t.Fatalf("huntSeed(8, 1, 4, 3) = %d, want 14415425345905102346: hunt seeds must follow the base seed", got)
	}
}

// A replay command names a process target as one shell argument.
func TestShellQuoteProcessTargets(t *testing.T) {
	for in, want := range map[string]string{
		"no-dedup":              "no-dedup",
		"corpus/cases/x-1.json": "corpus/cases/x-1.json",
		"exec-hlc:node hlc.js":  "'exec-hlc:node hlc.js'",
		"exec:sh -c 'it''s'":    `'exec:sh -c '\''it'\'''\''s'\'''`,
		"":                      "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
