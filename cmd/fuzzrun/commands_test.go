package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"
)

// A flag that chose the mode before fuzzrun had commands is a usage error
// that names, on one line, the command line to write instead; campaign
// flags alone are still the campaign.
func TestModeFlagsAreCommands(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-consumer", "adr"}, "fuzzrun: -consumer is a command now: fuzzrun consumer adr\n"},
		{[]string{"-mutants", "-runs", "2"}, "fuzzrun: -mutants is a command now: fuzzrun mutants -runs 2\n"},
		{[]string{"-list", "-json"}, "fuzzrun: -list is a command now: fuzzrun list -json\n"},
		{[]string{"-replay", "x.json", "-target", "no-dedup"}, "fuzzrun: -replay is a command now: fuzzrun replay x.json -target no-dedup\n"},
		{[]string{"-replay=x.json"}, "fuzzrun: -replay is a command now: fuzzrun replay x.json\n"},
		{[]string{"-depth", "3", "--explore"}, "fuzzrun: -explore is a command now: fuzzrun explore -depth 3\n"},
		{[]string{"-consumer", "lru", "-explore", "-crashes", "0"}, "fuzzrun: -consumer is a command now: fuzzrun consumer lru -explore -crashes 0\n"},
		{[]string{"-db", "postgres", "-consumer", "lru", "-replay", "c.json"}, "fuzzrun: -consumer is a command now: fuzzrun consumer lru -db postgres -replay c.json\n"},
		{[]string{"-broker", "nats", "-consumer", "lru"}, "fuzzrun: -broker is a command now: fuzzrun broker nats -consumer lru\n"},
		{[]string{"-consumer"}, "fuzzrun: -consumer is a command now: fuzzrun consumer NAME|SCHEME:ARG\n"},
		{[]string{"-consumer", "exec:node c.js"}, "fuzzrun: -consumer is a command now: fuzzrun consumer 'exec:node c.js'\n"},
		{[]string{"-worker", "-worker-index", "1"}, "fuzzrun: -worker: fuzzrun campaign has no such flag"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := fuzzrun(t, c.args...)
			if r.code != exitUsage || !strings.HasPrefix(r.stderr, c.want) || r.stdout != "" {
				t.Fatalf("exit %d\nstderr:\n%s\nwant exit 2 and:\n%s", r.code, r.stderr, c.want)
			}
		})
	}
	// Campaign flags alone are the campaign.
	r := fuzzrun(t, "-duration", "0", "-checks", "20", "-workers", "1", "-property", "fencing", "-corpus", "", "-html", "", "-json")
	if r.code != exitOK || decode[campaignJSON](t, r).Checks != 20 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
}

// A parent hands its workers the generator's weights and swarm mode on
// their command line, and the hidden worker command reads them back.
func TestWorkerCommandCarriesWeights(t *testing.T) {
	for _, parent := range [][]string{
		{"campaign", "-weights", "crash=0,skew=3", "-swarm", "-seed", "9", "-workers", "2"},
		{"mutants", "-weights", "reorder=0", "-workers", "2"},
		{"campaign", "-seed", "9", "-workers", "2"},
	} {
		o, err := lookupCommand(parent[0]).parse(parent[1:])
		if err != nil {
			t.Fatalf("%v: %v", parent, err)
		}
		args := workerCommand("fuzzrun", o, 1, 0, time.Minute).Args
		if args[1] != "worker" {
			t.Fatalf("worker command line %q", args)
		}
		w, err := lookupCommand("worker").parse(args[2:])
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if w.weights.String() != o.weights.String() || w.swarm != o.swarm || w.mutants != o.mutants || w.workerIndex != 1 || w.seed != o.seed {
			t.Errorf("%v: the worker reads %q as weights %q swarm %t mutants %t index %d seed %d", parent, args, w.weights, w.swarm, w.mutants, w.workerIndex, w.seed)
		}
		if parent[0] == "campaign" && slices.Contains(parent, "-swarm") != slices.Contains(args, "-swarm") {
			t.Errorf("%v: worker command line %q", parent, args)
		}
	}
}

// Without -tags servers, fuzzrun broker and the targets over real servers
// answer a usage error that gives the command to run instead.
func TestDefaultBuildNamesTheTag(t *testing.T) {
	saved := ext.Registered
	ext.Registered = nil
	defer func() { ext.Registered = saved }()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"broker", "nats", "-checks", "3"}, "fuzzrun: fuzzrun broker is not in this build, which leaves out the adapters of real servers and brokers to build fast; run it as\n  go run -tags servers ./cmd/fuzzrun broker nats -checks 3\n"},
		{[]string{"-target", "postgres", "-duration", "5s"}, "fuzzrun: -target postgres is not in this build, which leaves out the adapters of real servers and brokers to build fast; run it as\n  go run -tags servers ./cmd/fuzzrun -target postgres -duration 5s\n"},
		{[]string{"replay", "x.json", "-target", "sqlite"}, "  go run -tags servers ./cmd/fuzzrun replay x.json -target sqlite\n"},
		{[]string{"consumer", "redissetnx"}, "fuzzrun: the consumer redissetnx is not in this build, which leaves out the adapters of real servers and brokers to build fast; run it as\n  go run -tags servers ./cmd/fuzzrun consumer redissetnx\n"},
	}
	for _, c := range cases {
		r := fuzzrun(t, c.args...)
		if r.code != exitUsage || !strings.HasSuffix(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant it to end with:\n%s", c.args, r.code, r.stderr, c.want)
		}
	}
	r := fuzzrun(t, "list")
	mustContain(t, "list", r.stdout, "built with -tags servers (go run -tags servers ./cmd/fuzzrun list)", "postgres",
		"redissetnx", "built with -tags servers (go run -tags servers ./cmd/fuzzrun consumer redissetnx)")
}

// The default binary links no adapter of a real server or broker: they
// would double its build from an empty cache (docs/figures.md).
func TestDefaultBuildLeavesServersOut(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	heavy := []string{"github.com/nats-io/nats-server/v2/server", "github.com/twmb/franz-go/pkg/kfake", "github.com/rabbitmq/amqp091-go",
		"github.com/redis/go-redis/v9", "github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/servers"}
	for _, tags := range []string{"", "servers"} {
		out, err := exec.Command(goTool, "list", "-tags", tags, "-deps", ".").Output()
		if err != nil {
			t.Fatalf("go list -tags %q -deps: %v", tags, err)
		}
		deps := strings.Fields(string(out))
		for _, h := range heavy {
			if got := slices.Contains(deps, h); got != (tags == "servers") {
				t.Errorf("go list -tags %q -deps ./cmd/fuzzrun: has %s = %v", tags, h, got)
			}
		}
	}
}
