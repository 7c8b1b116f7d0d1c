package properties_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestChecksLinkNoDriver: importing the checks (properties, and through it
// the runner and the fault vocabulary) links no database driver and no
// adapter to a real system. Only impl/system/resolve, which opens targets
// by name, does. impl/adapter/synctime is the one adapter they link: it
// adapts a library's clock (testing/synctest), not a real system, and the
// checks play a store that reads time.Now through it.
func TestChecksLinkNoDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps",
		"github.com/idemcheck/idemcheck/properties",
		"github.com/idemcheck/idemcheck/faults/runner",
		"github.com/idemcheck/idemcheck/faults/gen").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasSuffix(dep, "/impl/adapter/synctime") {
			continue
		}
		for _, banned := range []string{"jackc/pgx", "redis/go-redis", "modernc.org/sqlite", "modernc.org/libc", "/impl/adapter/", "nats-io", "rabbitmq", "twmb/franz-go"} {
			if strings.Contains(dep, banned) {
				t.Errorf("the checks link %s", dep)
			}
		}
	}
}
