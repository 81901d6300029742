package faults_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/check"
	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/results"
)

// withHistory makes o keep its history for the second judge, in a fresh
// run directory of the test's: dir, the file's path, and the file, to
// close after the run.
func withHistory(t *testing.T, o *loadgen.Options) (dir, path string, hf *loadgen.HistoryFile) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, results.HistoryDir, "run"+results.HistoryExt)
	hf, err := loadgen.NewHistoryFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o.History, o.Reporter = true, loadgen.Tee(o.Reporter, hf)
	return dir, path, hf
}

// secondJudge writes s as dir's summary.json, names the run's history
// (at path) after it, and runs lockbench check's judge over the directory:
// it must re-derive every count of s from the history alone.
func secondJudge(ctx context.Context, t *testing.T, dir, path string, s results.Summary) {
	t.Helper()
	if err := os.Rename(path, filepath.Join(dir, results.HistoryDir, s.ID()+results.HistoryExt)); err != nil {
		t.Fatalf("the run's history: %v", err)
	}
	var buf bytes.Buffer
	if err := results.WriteJSON(&buf, []results.Summary{s}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.SummaryJSONFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := check.Dir(ctx, dir, check.Options{}, &out)
	if err != nil {
		t.Fatalf("check: %v\n%s", err, out.String())
	}
	if n := rep.Disagreements(); n > 0 {
		t.Errorf("the second judge disagrees with the store (%d):\n%s", n, out.String())
	}
}
