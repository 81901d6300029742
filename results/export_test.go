package results

// Internals the external tests (package results_test, which use
// resultstest's fixtures) check.
var (
	LoggedIntervals = loggedIntervals
	HlogFingerprint = hlogFingerprint
	Normalized      = normalized
)
