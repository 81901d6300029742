package selfcheck

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/strategies/pgonconflict"
)

// pgx alone and pgbench run exactly pg-onconflict's statements: what they
// run, pgonconflict.ClaimSQL and ReleaseSQL, is what the strategy runs,
// the constants claimSQL and releaseSQL of strategies/pgonconflict/sql.go.
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
	for name, ours := range map[string]string{"claimSQL": pgonconflict.ClaimSQL, "releaseSQL": pgonconflict.ReleaseSQL} {
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
