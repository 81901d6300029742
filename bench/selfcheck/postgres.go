package selfcheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/strategies"
	"github.com/lockbench/lockbench/strategies/pgonconflict"
)

// runPostgres is `lockbench compare-postgres`, the Redis check's against
// Postgres: pgbench (-M prepared) running pg-onconflict's own claim and
// release statements, the same cycle from pgx alone, then lockbench's
// pg-onconflict at zero hold ("The Postgres check" in the package doc).
func runPostgres(ctx context.Context, cfg Config, open OpenHarness, stdout, stderr io.Writer) error {
	bin, err := findPgbench()
	if err != nil {
		return err
	}
	// Whole cycles per client: pgbench's -t counts per client.
	perClient := (cfg.Requests + cfg.Clients - 1) / cfg.Clients
	n := perClient * cfg.Clients
	cluster, err := servers.Start(ctx, servers.Needs{Postgres: true}, servers.Options{})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	dsn := cluster.Endpoints().PostgresDSN

	sc := lockbenchScenario("compare-postgres", cfg.Clients, n)
	h, err := open(cluster.Endpoints())
	if err != nil {
		return err
	}
	defer h.Close()
	// The lock table and its sequence, as the strategy makes them, before
	// pgbench runs first.
	lock := strategies.Config{PostgresDSN: dsn, TTL: sc.TTL, Owner: "compare-postgres"}
	s, err := pgonconflict.New(ctx, lock)
	if err != nil {
		return fmt.Errorf("pg-onconflict: %s", servers.Redact(err.Error()))
	}
	_ = s.Close()

	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("compare-postgres: %s", servers.Redact(err.Error()))
	}
	defer admin.Close(context.WithoutCancel(ctx))
	script, err := writePgbenchScript(cfg.Clients)
	if err != nil {
		return err
	}
	defer os.Remove(script)
	owner, err := randomOwner(compareOwner)
	if err != nil {
		return err
	}
	pg := pgbenchRun{bin: bin, script: script, dsn: dsn, owner: owner,
		clients: cfg.Clients, perClient: perClient, ttl: sc.TTL.Truncate(time.Microsecond)}

	fmt.Fprintf(stdout, "lock cycles/s: pg-onconflict's claim then release, %d clients, %d cycles a measurement (one key each), local Postgres\n", cfg.Clients, n)
	fmt.Fprintf(stdout, "pgbench is `pgbench -M prepared -c %d` on the same two statements; lockbench is `run --strategy pg-onconflict --instances 1 --workers %d --deliveries 1 --hold 0 --lock-key payment`\n", cfg.Clients, cfg.Clients)
	return postgresComparison(ctx, cfg, pg, admin, h, sc).run(ctx, stdout, stderr)
}

// postgresComparison is compare-postgres's comparison: pg's pgbench, pgx
// alone and lockbench's pg-onconflict through h, the lock table vacuumed
// through admin between measurements.
func postgresComparison(ctx context.Context, cfg Config, pg pgbenchRun, admin *pgx.Conn, h Harness, sc loadgen.Scenario) comparison {
	// Before each measurement the lock table is vacuumed: every cycle
	// leaves two dead row versions, and a measurement that ran on the
	// ones the last left (until autovacuum came by) would pay for them.
	// pgbench vacuums its own tables before a run for the same reason.
	vacuum := func() error {
		if _, err := admin.Exec(ctx, "VACUUM lockbench_locks"); err != nil {
			return fmt.Errorf("compare-postgres: vacuuming the lock table between measurements: %s", servers.Redact(err.Error()))
		}
		return nil
	}
	n := pg.perClient * pg.clients
	return comparison{
		name:   "compare-postgres",
		native: "pgbench", bare: "pgx alone", ours: "lockbench pg-onconflict",
		nativeShort: "pgbench", bareShort: "pgx",
		bareWhy:   "the Go client's cost against pgbench's C",
		rounds:    cfg.Rounds,
		failBelow: cfg.FailBelow,
		profile:   cfg.CPUProfile,
		library:   []string{"github.com/jackc/"}, // pgx and its pool's puddle
		settle:    vacuum,
		measure: [3]func() (cycleRate, error){
			func() (cycleRate, error) { return pg.cycles(ctx) },
			func() (cycleRate, error) {
				return measured(ctx, "bare", func() (cycleRate, error) { return pgxCycles(ctx, pg.dsn, pg.clients, n, pg.ttl) })
			},
			func() (cycleRate, error) {
				return measured(ctx, "lockbench", func() (cycleRate, error) { return lockbenchCycles(ctx, h, "pg-onconflict", sc) })
			},
		},
	}
}

// pgbenchRun is compare-postgres's pgbench command: clients clients of
// perClient cycles each, running script against dsn as owner.
type pgbenchRun struct {
	bin, script, dsn, owner string
	clients, perClient      int
	ttl                     time.Duration
}

// cycles runs pgbench once: its rate, and its CPU per cycle.
func (p pgbenchRun) cycles(ctx context.Context) (cycleRate, error) {
	n := p.perClient * p.clients
	c := exec.CommandContext(ctx, p.bin, "-n", "-M", "prepared", "-c", strconv.Itoa(p.clients), "-t", strconv.Itoa(p.perClient),
		"-f", p.script, "-D", "n=0", "-D", "nclients="+strconv.Itoa(p.clients), "-D", "owner="+p.owner,
		"-D", fmt.Sprintf("ttl=%d microseconds", p.ttl.Microseconds()), p.dsn)
	var errb strings.Builder
	c.Stderr = &errb
	out, err := c.Output()
	if err != nil {
		if ctx.Err() != nil {
			return cycleRate{}, ctx.Err()
		}
		return cycleRate{}, fmt.Errorf("pgbench: %w: %s", err, servers.Redact(strings.Join(strings.Fields(errb.String()), " ")))
	}
	tps, err := parsePgbenchTPS(out)
	return cycleRate{perSec: tps, cpu: childCPU(c.ProcessState) / time.Duration(n)}, err
}

// findPgbench returns the newest Debian PostgreSQL's pgbench
// (/usr/lib/postgresql/N/bin, shipped with the server package), else the
// one on PATH.
func findPgbench() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(a))))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(b))))
		return vb - va
	})
	for _, p := range dirs {
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	return "", errors.New("pgbench not found: install PostgreSQL (Debian: apt-get install postgresql-15, which ships /usr/lib/postgresql/15/bin/pgbench)")
}

// pgbenchScript is a pgbench script running pg-onconflict's lock cycle:
// the claim, its token kept (\gset), then the release. Client c's n-th
// cycle takes key c + clients·(n−1).
func pgbenchScript() string {
	claim := strings.NewReplacer("$1", ":key", "$2", ":owner", "$3", ":ttl").Replace(pgonconflict.ClaimSQL)
	release := strings.NewReplacer("$1", ":key", "$2", ":owner", "$3", ":token").Replace(pgonconflict.ReleaseSQL)
	return `\set n :n + 1
\set key :client_id + :nclients * (:n - 1)
` + claim + ` \gset
` + release + ";\n"
}

// writePgbenchScript writes pgbenchScript to a temporary file.
func writePgbenchScript(clients int) (string, error) {
	f, err := os.CreateTemp("", "lockbench-pgbench-*.sql")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(pgbenchScript())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

var tpsLine = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

// parsePgbenchTPS reads pgbench's transactions per second (one lock cycle
// each) from its report.
func parsePgbenchTPS(out []byte) (float64, error) {
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench: no tps line in %q", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// compareOwner prefixes the claims' owner in all three measurements, each
// with its own random suffix (randomOwner): loadgen's prefix for lockbench's
// one instance, so the rows are one width whichever measurement wrote them
// last, and no measurement's updates find less room on the table's pages.
var compareOwner = loadgen.InstanceOwner(0)

// randomOwner is prefix/16 random hex digits, as pg-onconflict makes its
// owners.
func randomOwner(prefix string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + "/" + hex.EncodeToString(b[:]), nil
}

// pgxCycles runs n lock cycles of pg-onconflict's statements from clients
// goroutines with the strategy's pool settings (pgonconflict.DefaultMaxConns,
// DefaultConnectTimeout, DefaultWarmConns opened first) and its statement
// timeout, and nothing else: no store, no histograms, no dispatch. Cycle i
// takes key "lockbench:pay:i", as lockbench's payment i does. The CPU is
// the process's over the loop.
func pgxCycles(ctx context.Context, dsn string, clients, n int, ttl time.Duration) (cycleRate, error) {
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return cycleRate{}, errors.New("pgx baseline: the Postgres DSN does not parse")
	}
	pcfg.MaxConns = pgonconflict.DefaultMaxConns
	pcfg.ConnConfig.ConnectTimeout = pgonconflict.DefaultConnectTimeout
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return cycleRate{}, fmt.Errorf("pgx baseline: %s", servers.Redact(err.Error()))
	}
	defer pool.Close()
	var warm []*pgxpool.Conn
	for range pgonconflict.DefaultWarmConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			break
		}
		warm = append(warm, c)
	}
	for _, c := range warm {
		c.Release()
	}
	owner, err := randomOwner(compareOwner)
	if err != nil {
		return cycleRate{}, err
	}
	cycle := func(key string) error {
		sctx, cancel := context.WithTimeout(ctx, pgonconflict.DefaultStatementTimeout)
		var token int64
		err := pool.QueryRow(sctx, pgonconflict.ClaimSQL, key, owner, ttl).Scan(&token)
		cancel()
		if err != nil {
			return fmt.Errorf("claim %s: %w", key, err)
		}
		sctx, cancel = context.WithTimeout(ctx, pgonconflict.DefaultStatementTimeout)
		tag, err := pool.Exec(sctx, pgonconflict.ReleaseSQL, key, owner, token)
		cancel()
		if err == nil && tag.RowsAffected() != 1 {
			err = errors.New("not the owner")
		}
		if err != nil {
			return fmt.Errorf("release %s: %w", key, err)
		}
		return nil
	}
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), processCPU()
	for range clients {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := cycle("lockbench:pay:" + strconv.FormatInt(i, 10)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	cpu, secs := processCPU()-cpu0, time.Since(start).Seconds()
	if err, _ := firstErr.Load().(error); err != nil {
		if ctx.Err() != nil {
			return cycleRate{}, ctx.Err()
		}
		return cycleRate{}, fmt.Errorf("pgx baseline: %s", servers.Redact(err.Error()))
	}
	return cycleRate{perSec: float64(n) / secs, cpu: cpu / time.Duration(n)}, nil
}
