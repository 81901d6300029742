package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lockbench/lockbench/results"
)

// row is one run's row in summary.json or verdicts.json: its counts, by
// JSON name, those the row has.
type row struct {
	file   string // the file's name, results.SummaryJSONFile or results.VerdictsFile
	fault  string // the run's fault (its identity's)
	counts map[string]int64
	// The judgement and what it rests on, where the row has them.
	judged struct {
		Unsafe       *bool            `json:"unsafe"`
		Verdict      *string          `json:"verdict"`
		Availability *float64         `json:"availability"`
		Errors       map[string]int64 `json:"errors"`
	}
}

// runRows is one run and its rows, in the order of the files.
type runRows struct {
	id   string
	rows []row
}

// identity is what names a row's run (results.Summary.ID).
type identity struct {
	Strategy string `json:"strategy"`
	Scenario string `json:"scenario"`
	Fault    string `json:"fault"`
	Variant  string `json:"variant"`
	Trial    int    `json:"trial"`
	Fencing  bool   `json:"fencing"`
}

// id is the run's ID, as results names its files.
func (i identity) id() string {
	s := results.Summary{Strategy: i.Strategy, Scenario: i.Scenario, Fault: i.Fault, Variant: i.Variant, Trial: i.Trial, Fencing: i.Fencing}
	return s.ID()
}

// readRows reads the rows of dir's summary.json and verdicts.json, each
// run once, in the order they first appear. It says so when dir has
// neither, and when it is packed.
func readRows(dir string) ([]runRows, error) {
	var runs []runRows
	at := map[string]int{}
	found := false
	for _, name := range []string{results.SummaryJSONFile, results.VerdictsFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		found = true
		var objs []json.RawMessage
		if err := json.Unmarshal(data, &objs); err != nil {
			return nil, fmt.Errorf("check: %s: %w", filepath.Join(dir, name), err)
		}
		seen := map[string]int{} // a file's runs of one ID: the k-th is ID.k (results.FileIDs)
		for n, obj := range objs {
			id, r, err := decodeRow(name, obj)
			if err != nil {
				return nil, fmt.Errorf("check: %s: row %d: %w", filepath.Join(dir, name), n+1, err)
			}
			seen[id]++
			if k := seen[id]; k > 1 {
				id += "." + strconv.Itoa(k)
			}
			j, ok := at[id]
			if !ok {
				j = len(runs)
				at[id] = j
				runs = append(runs, runRows{id: id})
			}
			runs[j].rows = append(runs[j].rows, r)
		}
	}
	if !found {
		return nil, noRows(dir)
	}
	return runs, nil
}

// decodeRow decodes one row of the file name.
func decodeRow(name string, raw json.RawMessage) (string, row, error) {
	var ident identity
	if err := json.Unmarshal(raw, &ident); err != nil {
		return "", row{}, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", row{}, err
	}
	r := row{file: name, fault: ident.Fault, counts: map[string]int64{}}
	if err := json.Unmarshal(raw, &r.judged); err != nil {
		return "", row{}, err
	}
	var zero Counts
	for _, f := range zero.fields() {
		v, ok := obj[f.name]
		if !ok {
			continue
		}
		var n int64
		if err := json.Unmarshal(v, &n); err != nil {
			return "", row{}, fmt.Errorf("%s: %w", f.name, err)
		}
		r.counts[f.name] = n
	}
	return ident.id(), r, nil
}

// noRows is the error of a directory with no summary.json nor
// verdicts.json.
func noRows(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, results.ArchiveFile)); err == nil {
		return fmt.Errorf("check: %s is packed: unpack it first (cd %s && tar --zstd -xf %s)", dir, dir, results.ArchiveFile)
	}
	return fmt.Errorf("check: no %s or %s in %s", results.SummaryJSONFile, results.VerdictsFile, dir)
}
