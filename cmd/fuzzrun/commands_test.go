package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/cmd/fuzzrun/internal/ext"
)

// The flags-only spellings of the modes are read as the commands they
// meant, with a note that gives the new spelling; plain campaign flags are
// a campaign, without a note.
func TestLegacySpellings(t *testing.T) {
	cases := []struct {
		args []string
		cmd  string
		rest []string
	}{
		{[]string{"-duration", "5s", "-target", "no-dedup"}, "campaign", []string{"-duration", "5s", "-target", "no-dedup"}},
		{[]string{"-json", "-html", "", "-corpus", ""}, "campaign", []string{"-json", "-html", "", "-corpus", ""}},
		{[]string{"-mutants", "-runs", "2"}, "mutants", []string{"-runs", "2"}},
		{[]string{"-list", "-json"}, "list", []string{"-json"}},
		{[]string{"-replay", "x.json", "-target", "no-dedup"}, "replay", []string{"x.json", "-target", "no-dedup"}},
		{[]string{"-replay=x.json"}, "replay", []string{"x.json"}},
		{[]string{"-explore", "-depth", "3"}, "explore", []string{"-depth", "3"}},
		{[]string{"-explore", "-projection", "-copies", "3"}, "explore", []string{"-projection", "-copies", "3"}},
		{[]string{"-consumer", "lru", "-checks", "5"}, "consumer", []string{"lru", "-checks", "5"}},
		{[]string{"-consumer", "lru", "-explore", "-crashes", "0"}, "consumer", []string{"lru", "-explore", "-crashes", "0"}},
		{[]string{"-db", "postgres", "-consumer", "lru", "-replay", "c.json"}, "consumer", []string{"lru", "-replay", "c.json", "-db", "postgres"}},
		{[]string{"-broker", "nats:no-dlq", "-checks", "3"}, "broker", []string{"nats:no-dlq", "-checks", "3"}},
		{[]string{"-broker", "nats", "-consumer", "lru", "-replay", "b.json"}, "broker", []string{"nats", "-consumer", "lru", "-replay", "b.json"}},
		{[]string{"-worker", "-worker-index", "1", "-mutants"}, "worker", []string{"-mutants", "-worker-index", "1"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmd, rest, note, err := translateLegacy(c.args)
			if err != nil {
				t.Fatal(err)
			}
			if cmd != c.cmd || !slices.Equal(rest, c.rest) {
				t.Fatalf("read as %s %q, want %s %q", cmd, rest, c.cmd, c.rest)
			}
			switch {
			case cmd == "campaign" || cmd == "worker":
				if note != "" {
					t.Fatalf("note %q for a plain campaign", note)
				}
			case !strings.Contains(note, "`fuzzrun "+cmd+" "):
				t.Fatalf("note %q does not give the new spelling", note)
			}
		})
	}
	// And they run: the note on stderr, the command's output on stdout.
	r := fuzzrun(t, "-list", "-property", "fencing")
	if r.code != exitOK || !strings.Contains(r.stdout, "fencing") || !strings.Contains(r.stderr, "`fuzzrun list -property fencing`") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
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
		{[]string{"-broker", "nats"}, "  go run -tags servers ./cmd/fuzzrun broker nats\n"},
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
