package check

// Counts are the counts of summary.json that a history derives
// (docs/history.md, "Deriving the counts"), under their JSON names.
type Counts struct {
	Payments       int64 `json:"payments"`
	NotAcquired    int64 `json:"not_acquired"`
	Strikes        int64 `json:"strikes"`
	Processed      int64 `json:"processed"`
	Duplicates     int64 `json:"duplicates"`
	Lost           int64 `json:"lost"`
	Unprocessed    int64 `json:"unprocessed"`
	Overdrafts     int64 `json:"overdrafts"`
	LostUpdates    int64 `json:"lost_updates"`
	Overlaps       int64 `json:"overlaps"`
	OverlapNs      int64 `json:"overlap_ns"`
	OverlapMaxNs   int64 `json:"overlap_max_ns"`
	StaleRejected  int64 `json:"stale_rejected"`
	StaleAccepted  int64 `json:"stale_accepted"`
	TokenRegressed int64 `json:"token_regressed"`
	TokenReused    int64 `json:"token_reused"`
	UnsafeStrikes  int64 `json:"unsafe_strikes"`
	StrikesMissed  int64 `json:"strikes_missed"`
	Conflicts      int64 `json:"conflicts"`
}

// field is one count by its summary.json name.
type field struct {
	name  string
	value int64
}

// fields lists c's counts in the order they are compared and printed.
func (c *Counts) fields() []field {
	return []field{
		{"payments", c.Payments},
		{"not_acquired", c.NotAcquired},
		{"strikes", c.Strikes},
		{"processed", c.Processed},
		{"duplicates", c.Duplicates},
		{"lost", c.Lost},
		{"unprocessed", c.Unprocessed},
		{"overdrafts", c.Overdrafts},
		{"lost_updates", c.LostUpdates},
		{"overlaps", c.Overlaps},
		{"overlap_ns", c.OverlapNs},
		{"overlap_max_ns", c.OverlapMaxNs},
		{"stale_rejected", c.StaleRejected},
		{"stale_accepted", c.StaleAccepted},
		{"token_regressed", c.TokenRegressed},
		{"token_reused", c.TokenReused},
		{"unsafe_strikes", c.UnsafeStrikes},
		{"strikes_missed", c.StrikesMissed},
		{"conflicts", c.Conflicts},
	}
}
