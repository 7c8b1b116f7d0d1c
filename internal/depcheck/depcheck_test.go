package depcheck_test

import (
	"os/exec"
	"strings"
	"testing"
)

// drivers are the import path prefixes of database and broker clients.
var drivers = []string{
	"modernc.org/sqlite",
	"github.com/jackc/pgx",
	"github.com/redis/go-redis",
	"github.com/lib/pq",
	"github.com/go-sql-driver/mysql",
	"github.com/mattn/go-sqlite3",
	"github.com/nats-io/",
	"github.com/rabbitmq/amqp091-go",
	"github.com/twmb/franz-go",
}

// The properties and the fault packages link no database driver and no
// broker client: go list -deps over them names none.
func TestPropertiesAndFaultsLinkNoDriver(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	out, err := exec.Command("go", "list", "-deps",
		"github.com/idemcheck/idemcheck/properties", "github.com/idemcheck/idemcheck/faults/...").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps named only %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		for _, p := range drivers {
			if strings.HasPrefix(d, p) {
				t.Errorf("properties or faults/... links %s", d)
			}
		}
	}
}
