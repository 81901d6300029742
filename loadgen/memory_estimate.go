package loadgen

import (
	"sync"
	"time"

	"github.com/lockbench/lockbench/internal/usage"
	"github.com/lockbench/lockbench/results"
)

// Memory estimate of a run: what the arrays sized by the scenario take, in
// bytes per payment in flight (a paymentState, twice over), per delivery
// (a recordVersion, twice over), per account, and per account in account
// mode (its overlap start). See "Memory estimate" in the package doc.
const (
	bytesPerPayment         = 2 * 64
	bytesPerDelivery        = 2 * 24
	bytesPerAccount         = 16 + 64
	bytesPerAccountLockKey  = 8
	garbageCollectorOverrun = 2
)

// intervalBytes is what one latency interval keeps: a histogram per phase.
var intervalBytes = sync.OnceValue(func() int64 {
	return int64(results.NumPhases) * int64(results.NewHistogram().ByteSize())
})

// Memory is CheckMemory's estimate of what a run of the scenario holds, by
// what sizes it.
type Memory struct {
	Accounts, Payments, Intervals int64 // bytes
}

// Total is the estimate in bytes, twice the arrays: the garbage collector
// lets the heap grow to twice what is live before it collects.
func (m Memory) Total() int64 {
	return garbageCollectorOverrun * (m.Accounts + m.Payments + m.Intervals)
}

// MemoryEstimate estimates the memory a run of s holds (see Memory). It
// assumes s is within the ranges Validate checks.
func (s *Scenario) MemoryEstimate() Memory {
	perAccount, perPayment := int64(bytesPerAccount), int64(bytesPerPayment+s.Deliveries*bytesPerDelivery)
	if s.LockKey != "payment" {
		perAccount += bytesPerAccountLockKey
	}
	inFlight := int64(s.Instances * (s.Workers + QueueDepth(s.Workers)))
	if n, ok := s.PaymentBound(); ok {
		inFlight = min(inFlight, int64(n))
	}
	m := Memory{Accounts: int64(s.Accounts) * perAccount, Payments: inFlight * perPayment}
	// The run's length, when the scenario says it: intervals are kept for
	// the whole run unless they stream to a log (Options.StreamIntervals).
	length := s.Duration + s.Warmup
	if s.Duration == 0 && s.Rate > 0 {
		length = time.Duration(float64(s.Payments)/s.Rate*float64(time.Second)) + s.Warmup
	}
	if length > 0 {
		m.Intervals = (int64(length/s.LatencyInterval()) + 1) * intervalBytes()
	}
	return m
}

// CheckMemory refuses a scenario whose estimated memory (MemoryEstimate)
// is more than the machine has available now (usage.MemAvailable), with a
// usage error naming the flag that sizes most of it: a clear refusal
// instead of an out-of-memory crash once the run has started. Where the
// available memory is unknown it checks nothing.
func (s *Scenario) CheckMemory() error {
	avail, ok := usage.MemAvailable()
	if !ok {
		return nil
	}
	m := s.MemoryEstimate()
	if m.Total() <= avail {
		return nil
	}
	flag, what := "accounts", "fewer accounts"
	switch {
	case m.Payments >= m.Accounts && m.Payments >= m.Intervals:
		flag, what = "payments", "fewer payments (--payments, or --rate × --duration)"
		if s.Payments == 0 && s.Rate > 0 {
			flag = "rate"
		}
	case m.Intervals >= m.Accounts:
		flag, what = "duration", "a shorter run or a longer --interval"
	}
	intervals := ""
	if m.Intervals > 0 {
		intervals = ", latency intervals: " + usage.FormatBytes(m.Intervals)
	}
	return usageErr(flag, "the scenario needs about %s of memory (%d accounts: %s, payments in flight: %s%s, twice over for the garbage collector); %s is available (MemAvailable); want %s",
		usage.FormatBytes(m.Total()), s.Accounts, usage.FormatBytes(m.Accounts), usage.FormatBytes(m.Payments),
		intervals, usage.FormatBytes(avail), what)
}
