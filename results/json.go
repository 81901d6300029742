package results

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes ss as an indented JSON array: the format of summary.json
// and verdicts.json. Missing errors and latency objects are
// written as {} and every phase is present, so scripts need no nil checks;
// a percentile with fewer than MinTailSamples samples beyond it is null
// (Latency.MarshalJSON); unsafe and availability are derived from the
// counters as Finish does.
func WriteJSON(w io.Writer, ss []Summary) error {
	out := make([]Summary, len(ss))
	for i, s := range ss {
		out[i] = normalized(s)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("results: encoding summaries: %w", err)
	}
	return nil
}

// ReadJSON reads a JSON array of summaries written by WriteJSON.
func ReadJSON(r io.Reader) ([]Summary, error) {
	var ss []Summary
	if err := json.NewDecoder(r).Decode(&ss); err != nil {
		return nil, fmt.Errorf("results: decoding summaries: %w", err)
	}
	return ss, nil
}

// normalized returns s with non-nil Errors, a Latency entry per phase with
// only the statistics it reports (Latency.Has; the others zero, as the file
// has them null), trial 1 when none was set, and Unsafe and Availability
// derived from the counters (Finish), so a file never contradicts itself
// and a summary read back equals the one written. The maps of s are
// copied, never modified.
func normalized(s Summary) Summary {
	errs := make(map[string]int64, len(s.Errors))
	for k, v := range s.Errors {
		errs[k] = v
	}
	s.Errors = errs
	lat := make(map[string]Latency, NumPhases)
	for _, name := range PhaseNames {
		lat[name] = s.Latency[name]
	}
	for k, v := range s.Latency {
		lat[k] = v
	}
	for k, v := range lat {
		lat[k] = v.honest()
	}
	s.Latency = lat
	if s.LatencyByOutcome != nil {
		out := make(map[string]Latency, len(s.LatencyByOutcome))
		for k, v := range s.LatencyByOutcome {
			out[k] = v.honest()
		}
		s.LatencyByOutcome = out
	}
	if s.Trial == 0 {
		s.Trial = 1
	}
	s.Finish()
	return s
}
