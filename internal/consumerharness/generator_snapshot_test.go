package consumerharness

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGeneratorSnapshot = flag.Bool("update-generator-snapshot", false, "rewrite testdata/generator-snapshot.txt from the generator as it is")

// generatorSnapshot holds, for each of the first snapshotSeeds examples
// of Generator at a few maxSteps, a hash of the scenario's JSON: the same
// seed must draw the same scenario, so that stored seeds and fuzzing
// inputs keep their meaning when the generator's code changes.
const (
	generatorSnapshot = "generator-snapshot.txt"
	snapshotSeeds     = 200
)

func snapshotLines(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, steps := range []int{4, 16, 40} {
		g := Generator(steps)
		for i := range snapshotSeeds {
			b, err := g.Example(i).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			out = append(out, fmt.Sprintf("%d %d %s", steps, i, hex.EncodeToString(sum[:])[:16]))
		}
	}
	return out
}

// The default generator draws, for every seed, the scenario it drew when
// the snapshot was taken, byte for byte.
func TestGeneratorSnapshot(t *testing.T) {
	path := filepath.Join("testdata", generatorSnapshot)
	got := snapshotLines(t)
	if *updateGeneratorSnapshot {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	if len(want) != len(got) {
		t.Fatalf("snapshot has %d lines, the generator gives %d", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("maxSteps and seed %q: the generator draws another scenario than the snapshot's (%q)", got[i], want[i])
		}
	}
}
