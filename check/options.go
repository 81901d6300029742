package check

import (
	"runtime"
	"time"
)

// The defaults of Options.
const (
	// DefaultMaxKeys is the most lock keys checked per run: 2,000.
	DefaultMaxKeys = 2000
	// DefaultMaxOpsPerKey is the most operations in one porcupine check:
	// 20,000.
	DefaultMaxOpsPerKey = 20000
	// DefaultKeyTimeout is the time porcupine may spend on one key: 10 s.
	DefaultKeyTimeout = 10 * time.Second
	// DefaultTimeout is the time the exclusion check may spend on one
	// run: 2 minutes.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxHTML is the most visualisations written per run: 5.
	DefaultMaxHTML = 5
)

// The command-line flags of the limits, as the lines that report a cut
// name them.
const (
	FlagMaxKeys      = "--max-keys"
	FlagMaxOpsPerKey = "--max-ops-per-key"
	FlagKeyTimeout   = "--key-timeout"
	FlagTimeout      = "--timeout"
)

// Options bound the exclusion check. A zero field takes its default.
type Options struct {
	// MaxKeys is the most lock keys checked per run (DefaultMaxKeys).
	// The keys where the store counted an overlap come first, then the
	// others in name order.
	MaxKeys int
	// MaxOpsPerKey is the most operations in one porcupine check
	// (DefaultMaxOpsPerKey). A key with more is checked in chunks cut
	// where no operation is in flight; a stretch with no such cut longer
	// than this is left unchecked.
	MaxOpsPerKey int
	// KeyTimeout is the time porcupine may spend on one key
	// (DefaultKeyTimeout), Timeout on one run (DefaultTimeout).
	KeyTimeout, Timeout time.Duration
	// MaxHTML is the most visualisations of violated keys written per
	// run (DefaultMaxHTML).
	MaxHTML int
	// Parallel is how many keys are checked at once (GOMAXPROCS).
	Parallel int
}

// withDefaults returns o with every zero field at its default.
func (o Options) withDefaults() Options {
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.MaxOpsPerKey <= 0 {
		o.MaxOpsPerKey = DefaultMaxOpsPerKey
	}
	if o.KeyTimeout <= 0 {
		o.KeyTimeout = DefaultKeyTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxHTML <= 0 {
		o.MaxHTML = DefaultMaxHTML
	}
	if o.Parallel <= 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
	return o
}
