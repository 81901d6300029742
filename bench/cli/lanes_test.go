package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/results"
)

// Verdict cells on two lanes, each with a Redis of its own: a kill-node in
// one lane leaves the other's runs alone, so every cell has the verdict it
// has on one lane (setnx is unsafe under pause by design, and safe under
// kill-node, whose node comes back long after the holder is done), and
// summary.json lists the runs in one lane's order (trial 1 of every cell,
// then trial 2), whichever lane finished first.
func TestLanes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two sets of servers; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "lanes")
	var stdout, stderr bytes.Buffer
	args := []string{"verdicts", "--lanes", "2", "--trials", "2", "--strategy", "setnx", "--fault", "none,pause,kill-node", "--out", out}
	if err := Run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "2 lanes") {
		t.Errorf("stderr does not say the cells run in 2 lanes:\n%s", stderr.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []results.Summary
	if err := json.Unmarshal(data, &runs); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range runs {
		got = append(got, s.Strategy+" "+s.Fault+" "+onOff(s.Fencing)+" "+s.Variant+" "+string(rune('0'+s.Trial))+" "+s.Label())
	}
	var want []string
	for _, trial := range []string{"1", "2"} {
		want = append(want, "setnx none off  "+trial+" SAFE", "setnx pause off  "+trial+" UNSAFE", "setnx kill-node off  "+trial+" SAFE")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
