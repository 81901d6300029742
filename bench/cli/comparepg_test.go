package cli

import (
	"bytes"
	"context"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
	"time"
)

// pgx alone and pgbench run exactly pg-onconflict's statements: the copies
// here are the constants of strategies/pgonconflict/sql.go.
func TestComparePostgresStatements(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../../strategies/pgonconflict/sql.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				tv, err := types.Eval(fset, nil, token.NoPos, types.ExprString(vs.Values[i]))
				if err == nil && tv.Value != nil && tv.Value.Kind() == constant.String {
					got[name.Name] = constant.StringVal(tv.Value)
				}
			}
		}
	}
	for name, ours := range map[string]string{"claimSQL": pgClaimSQL, "releaseSQL": pgReleaseSQL} {
		if got[name] != ours {
			t.Errorf("pgonconflict's %s = %q; compare-postgres runs %q", name, got[name], ours)
		}
	}
}

// The pgbench script is the two statements with pgbench's variables for
// the parameters, the claim's token kept for the release, and each
// client's keys its own.
func TestPgbenchScript(t *testing.T) {
	s := pgbenchScript()
	for _, want := range []string{
		`\set key :client_id + :nclients * (:n - 1)`,
		"SELECT :key::text, :owner::text, nextval('lockbench_lock_tokens'), now() + :ttl::interval",
		"RETURNING token \\gset\n",
		"WHERE key = :key AND owner = :owner AND token = :token AND expires_at > now();\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script has no %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "$") {
		t.Errorf("script still has a $ parameter:\n%s", s)
	}
	tps, err := parsePgbenchTPS([]byte("number of transactions actually processed: 16000/16000\ntps = 10234.567890 (without initial connection time)\n"))
	if err != nil || tps != 10234.567890 {
		t.Errorf("parsePgbenchTPS = %v, %v; want 10234.56789", tps, err)
	}
}

// compare-postgres runs pgbench, pgx alone and lockbench's pg-onconflict in
// interleaved rounds against the Postgres it starts, and prints compare-redis's
// table and closing lines.
func TestComparePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Postgres and pgbench; skipped with -short")
	}
	if _, err := findPgbench(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	err := Run(ctx, []string{"compare-postgres", "--rounds", "2", "--requests", "2000", "--clients", "4"}, &out, &errb)
	if err != nil && strings.HasPrefix(err.Error(), "servers:") {
		t.Skipf("local servers unavailable: %v", err)
	}
	if err != nil {
		t.Fatalf("compare-postgres: %v\n%s", err, errb.String())
	}
	t.Logf("\n%s", out.String())
	compareTable(t, out.String(), 2)
	for _, want := range []string{
		"ratio lockbench / pgbench:   ", "median of 2 rounds",
		"ratio lockbench / pgx alone: ", "target ≥ 0.95",
		"ratio pgx / pgbench:         ",
		"cpu per cycle (medians): pgbench ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
