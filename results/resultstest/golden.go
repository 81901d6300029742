package resultstest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update is the tests' -update flag: rewrite the golden files under
// testdata/ instead of comparing with them.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Golden compares got with testdata/name, rewriting it under -update.
func Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *Update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}
