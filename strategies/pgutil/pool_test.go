package pgutil

import (
	"strings"
	"testing"
)

// TestPoolConfig checks the DSN errors (naming the strategy, never quoting
// the DSN) and the pool defaults PoolConfig applies.
func TestPoolConfig(t *testing.T) {
	if _, err := PoolConfig("pgx", ""); err == nil || err.Error() != "pgx: no Config.PostgresDSN" {
		t.Errorf("empty DSN: err = %v; want pgx: no Config.PostgresDSN", err)
	}
	const bad = "postgres://u:s3cret@[::1" // unparseable, with a password
	for name, parse := range map[string]func(string, string) error{
		"PoolConfig": func(n, d string) error { _, err := PoolConfig(n, d); return err },
		"ConnConfig": func(n, d string) error { _, err := ConnConfig(n, d); return err },
	} {
		err := parse("pgx", bad)
		if err == nil || !strings.HasPrefix(err.Error(), "pgx: Config.PostgresDSN is not a valid connection string") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s(invalid DSN): err = %v; want the DSN not shown", name, err)
		}
	}
	pcfg, err := PoolConfig("pgx", "postgres://u@127.0.0.1:1/db")
	if err != nil {
		t.Fatal(err)
	}
	if pcfg.MaxConns != DefaultMaxConns || pcfg.ConnConfig.ConnectTimeout != DefaultConnectTimeout {
		t.Errorf("MaxConns, ConnectTimeout = %d, %v; want %d, %v", pcfg.MaxConns, pcfg.ConnConfig.ConnectTimeout, DefaultMaxConns, DefaultConnectTimeout)
	}
}
