package check

import (
	"fmt"
	"strconv"
)

// The pseudo-fields of a Disagreement that are no count of summary.json.
const (
	// FieldApplied: a write's applied and refused in the history are not
	// what the rules derive.
	FieldApplied = "applied"
	// FieldExclusion: the store counted an overlap on a key that
	// porcupine found exclusive.
	FieldExclusion = "exclusion"
	// FieldHistory: the history contradicts itself (Text says where).
	FieldHistory = "history"
)

// Report is what Dir found, run by run.
type Report struct {
	Runs []RunReport
}

// Disagreements counts the disagreements of every run.
func (r Report) Disagreements() int {
	n := 0
	for i := range r.Runs {
		n += len(r.Runs[i].Disagreements)
	}
	return n
}

// RunReport is the check of one run.
type RunReport struct {
	// ID is the run's ID (results.Summary.ID), its history's file name.
	ID string
	// History is the path of the run's history; "" when it has none,
	// and then nothing else is set.
	History string
	// Err is why the history could not be judged (unreadable or
	// malformed); then only ID and History are set.
	Err error
	// Counts are the counts the history derives.
	Counts Counts
	// Derived is the judgement the history derives.
	Derived Judgement
	// Rows are the run's rows, as their files give what is compared.
	Rows []RowFigures
	// Disagreements are where the history and the run's rows differ.
	Disagreements []Disagreement
	// Exclusion is the mutual-exclusion check.
	Exclusion Exclusion
	// Notes are what is worth saying that is no disagreement: the
	// exclusion check's findings and cuts, counts a row lacks, and what
	// the history's records could not hold. One line each.
	Notes []string
}

// RowFigures is one row of a run, in summary.json or verdicts.json: the
// figures the check compares, those the row has.
type RowFigures struct {
	File         string           `json:"file"`
	Counts       map[string]int64 `json:"counts"`
	Verdict      *string          `json:"verdict,omitempty"`
	Unsafe       *bool            `json:"unsafe,omitempty"`
	Availability *float64         `json:"availability,omitempty"`
	Errors       map[string]int64 `json:"errors,omitempty"`
}

// Disagreement is one field on which the history and a row of the run
// differ.
type Disagreement struct {
	// Field is the count's summary.json name, or FieldApplied or
	// FieldExclusion.
	Field string
	// File is the row's file (summary.json or verdicts.json), and
	// History and Row the count in the history and in the row; a count
	// only.
	File         string
	History, Row int64
	// Write is the write that disagrees (FieldApplied only).
	Write WriteMismatch
	// Key is the lock key (FieldExclusion only).
	Key string
	// HistoryText and RowText are the values of a field that is no count
	// (verdict, unsafe, availability); Text is what FieldHistory found.
	HistoryText, RowText, Text string
}

// String is the disagreement as its line says it, after the run's ID.
func (d Disagreement) String() string {
	switch d.Field {
	case FieldApplied:
		return fmt.Sprintf("applied key %s seq %d: history %s, the rules %s", d.Write.Key, d.Write.Seq, d.Write.History, d.Write.Rules)
	case FieldExclusion:
		return fmt.Sprintf("exclusion key %s: the store counted an overlap, porcupine found an order with one holder at a time", d.Key)
	case FieldHistory:
		return "history contradicts itself: " + d.Text
	}
	if d.HistoryText != "" || d.RowText != "" {
		return fmt.Sprintf("%s history %s, %s %s", d.Field, d.HistoryText, d.File, d.RowText)
	}
	return fmt.Sprintf("%s history %d, %s %d", d.Field, d.History, d.File, d.Row)
}

// group writes n with thousands separated by commas: 1,800.
func group(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for j := len(s) - 3; j > 0; j -= 3 {
		s = s[:j] + "," + s[j:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
