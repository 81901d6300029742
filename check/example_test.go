package check_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/lockbench/lockbench/check"
)

// A run directory with one run, setnx on one account: a worker takes the
// lock, enters, pays payment 1 and releases. Its history derives the
// counts of its summary.json row, and its one key was held by one worker
// at a time.
func ExampleDir() {
	dir, err := os.MkdirTemp("", "lockbench-check")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	summary := `[{"strategy":"setnx","scenario":"contended","fault":"none","variant":"","trial":1,"fencing":false,
  "payments":1,"not_acquired":0,"strikes":0,"processed":1,"duplicates":0,"lost":0,"unprocessed":0,"overdrafts":0,"lost_updates":0,
  "overlaps":0,"overlap_ns":0,"overlap_max_ns":0,"stale_rejected":0,"stale_accepted":0,
  "token_regressed":0,"token_reused":0,"unsafe_strikes":0,"strikes_missed":0,"conflicts":0}]`
	history := `{"ev":"header","version":1,"run":"setnx.contended.none.unfenced","strategy":"setnx","kind":"lock","store":"memory","mode":"account","fencing":false,"strict":false,"deliveries":1,"balances":[1000],"payments":0,"clock":[{"instance":0,"where":"coordinator","offset_ns":0,"uncertainty_ns":0}]}
{"ev":"offer","p":1,"a":0,"amount":250}
{"ev":"acquire","i":0,"w":0,"p":1,"a":0,"k":"lockbench:acct:0","inv":100,"ret":110,"ok":true,"token":0}
{"ev":"enter","i":0,"w":0,"p":1,"a":0,"k":"lockbench:acct:0","seq":1,"n":1,"at":120,"token":0,"processed":false,"balance":1000,"version":0}
{"ev":"finish","p":1,"a":0,"k":"lockbench:acct:0","seq":2,"n":1,"at":130,"token":0,"write":{"base":0,"debit":250,"balance":750,"applied":true,"version":1}}
{"ev":"release","i":0,"w":0,"p":1,"a":0,"k":"lockbench:acct:0","inv":140,"ret":150,"ok":true}
{"ev":"end","payments":1}
`
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(summary), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	path := check.HistoryPath(dir, "setnx.contended.none.unfenced")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fmt.Println(err)
		return
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := os.WriteFile(path, enc.EncodeAll([]byte(history), nil), 0o644); err != nil {
		fmt.Println(err)
		return
	}

	rep, err := check.Dir(context.Background(), dir, check.Options{}, os.Stdout)
	fmt.Println("disagreements:", rep.Disagreements(), "error:", err)
	// Output:
	// agree  setnx.contended.none.unfenced
	//   exclusion: ok, 1 key
	// disagreements: 0 error: <nil>
}
