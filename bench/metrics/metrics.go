package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockbench/lockbench/loadgen"
	"github.com/lockbench/lockbench/loadgen/store"
	"github.com/lockbench/lockbench/results"
)

// The names of the metrics (Namespace + "_" + name), for dashboards and
// tests.
const (
	Namespace = "lockbench"

	// PaymentsTotal counts payments by outcome: OutcomeOffered (handed to
	// the instances) and OutcomeProcessed (applied at least once, as the
	// store counts them).
	PaymentsTotal = "lockbench_payments_total"
	// DeliveriesTotal counts deliveries taken up by a worker.
	DeliveriesTotal = "lockbench_deliveries_total"
	// LockCyclesTotal counts lock attempts that ended, by outcome:
	// OutcomeAcquired or OutcomeNotAcquired (given up: not_acquired).
	LockCyclesTotal = "lockbench_lock_cycles_total"
	// NotAcquiredTotal counts deliveries that gave up on the lock
	// (summary.json's not_acquired).
	NotAcquiredTotal = "lockbench_not_acquired_total"
	// ErrorsTotal counts errors by class (summary.json's errors).
	ErrorsTotal = "lockbench_errors_total"
	// UnsafeOutcomes is the store's count so far of each unsafe outcome
	// (label kind: duplicates, lost, overdrafts, lost_updates,
	// stale_accepted); their sum is summary.json's unsafe count.
	UnsafeOutcomes = "lockbench_unsafe_outcomes"
	// LockViolations is the store's count so far of the lock failing
	// while the data stayed safe (kind: overlaps, stale_rejected).
	LockViolations = "lockbench_lock_violations"
	// RunActive is 1 while a run with these labels is running, 0 after.
	RunActive = "lockbench_run_active"
	// RunVerdict is 1 for the verdict a finished run got (label verdict:
	// safe, unsafe or unknown, summary.json's), 0 for the others; no
	// series while it runs, or for a run that failed.
	RunVerdict = "lockbench_run_verdict"
	// AcquireSeconds is the histogram of acquire latency.
	AcquireSeconds = "lockbench_acquire_latency_seconds"
	// TotalSeconds is the histogram of total latency (from each payment's
	// intended start to the end of its release).
	TotalSeconds = "lockbench_total_latency_seconds"
)

// Outcome label values.
const (
	OutcomeOffered     = "offered"
	OutcomeProcessed   = "processed"
	OutcomeAcquired    = "acquired"
	OutcomeNotAcquired = "not_acquired"
)

// LabelNames are the labels of every metric, in order: what a run is.
var LabelNames = []string{"strategy", "scenario", "fault", "variant", "trial"}

// LatencyBuckets are the classic histogram buckets, in seconds: 100µs to
// one minute, 1-2.5-5 per decade.
var LatencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// Native histogram resolution: buckets grow by at most 10% (schema 2),
// at most 160 of them per series before they are merged.
const (
	nativeBucketFactor = 1.1
	nativeMaxBuckets   = 160
)

// Labels identify a run. Trial is "1" for a command without trials.
type Labels struct {
	Strategy, Scenario, Fault, Variant, Trial string
}

func (l Labels) values() []string {
	return []string{l.Strategy, l.Scenario, l.Fault, l.Variant, l.Trial}
}

// TrialLabel is trial as a label value; 0 (no trials) is "1".
func TrialLabel(trial int) string { return strconv.Itoa(max(trial, 1)) }

// Exporter holds lockbench's metrics in a registry of its own (no Go
// runtime metrics: a dashboard of the benchmark, not of its process).
type Exporter struct {
	reg                                             *prometheus.Registry
	payments, deliveries, cycles, notAcquired, errs *prometheus.CounterVec
	unsafe, violations, active, verdict             *prometheus.GaugeVec
	acquire, total                                  *prometheus.HistogramVec
}

// New returns an Exporter with every metric registered and no series yet.
func New() *Exporter {
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(LabelNames[:len(LabelNames):len(LabelNames)], extra...))
	}
	gauge := func(name, help string, extra ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append(LabelNames[:len(LabelNames):len(LabelNames)], extra...))
	}
	histogram := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name, Help: help, Buckets: LatencyBuckets,
			NativeHistogramBucketFactor:     nativeBucketFactor,
			NativeHistogramMaxBucketNumber:  nativeMaxBuckets,
			NativeHistogramMinResetDuration: time.Hour,
		}, LabelNames)
	}
	e := &Exporter{
		reg:         prometheus.NewRegistry(),
		payments:    counter(PaymentsTotal, "Payments, by outcome: offered to the instances, processed (applied at least once).", "outcome"),
		deliveries:  counter(DeliveriesTotal, "Deliveries taken up by a worker."),
		cycles:      counter(LockCyclesTotal, "Lock attempts that ended, by outcome: acquired, not_acquired (gave up).", "outcome"),
		notAcquired: counter(NotAcquiredTotal, "Deliveries that gave up on the lock (not_acquired)."),
		errs:        counter(ErrorsTotal, "Errors, by class.", "class"),
		unsafe:      gauge(UnsafeOutcomes, "Unsafe outcomes the store has judged so far, by kind; their sum is the run's unsafe count.", "kind"),
		violations:  gauge(LockViolations, "Times the lock failed while the store kept the data safe, by kind: overlaps, stale_rejected.", "kind"),
		active:      gauge(RunActive, "1 while the run is running, 0 after."),
		verdict:     gauge(RunVerdict, "1 for the verdict the finished run got (safe, unsafe, unknown: it could not judge), 0 for the others.", "verdict"),
		acquire:     histogram(AcquireSeconds, "Acquire latency: from a delivery's first attempt to holding the lock, retries included."),
		total:       histogram(TotalSeconds, "Total latency: from a payment's intended start to the end of its release."),
	}
	e.reg.MustRegister(e.payments, e.deliveries, e.cycles, e.notAcquired, e.errs, e.unsafe, e.violations, e.active, e.verdict, e.acquire, e.total)
	return e
}

// Handler serves the metrics: the text format, OpenMetrics, or protobuf
// (with native histograms) as the scraper asks.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Run is the metrics of one run. Its methods are loadgen.Options'
// Progress and Interval; End marks the run over.
type Run struct {
	e      *Exporter
	labels []string
	mu     sync.Mutex
	last   loadgen.Progress // the counts already added
}

// errorClasses are the error classes a run reports (loadgen's), whose
// counters start at zero so that a dashboard sees them before the first.
var errorClasses = []string{loadgen.ErrClassTimeout, loadgen.ErrClassRefused, loadgen.ErrClassUnavailable,
	loadgen.ErrClassLostLock, loadgen.ErrClassStore, loadgen.ErrClassAgentLost, loadgen.ErrClassAdapterLost, loadgen.ErrClassOther}

// Run starts the series of a run labelled l, every counter at zero (a
// series that appears only with its first increment hides that increment
// from rate()), and marks it active.
func (e *Exporter) Run(l Labels) *Run {
	r := &Run{e: e, labels: l.values()}
	for _, o := range []string{OutcomeOffered, OutcomeProcessed} {
		e.payments.WithLabelValues(r.with(o)...)
	}
	for _, o := range []string{OutcomeAcquired, OutcomeNotAcquired} {
		e.cycles.WithLabelValues(r.with(o)...)
	}
	for _, c := range errorClasses {
		e.errs.WithLabelValues(r.with(c)...)
	}
	e.deliveries.WithLabelValues(r.labels...)
	e.notAcquired.WithLabelValues(r.labels...)
	e.acquire.WithLabelValues(r.labels...)
	e.total.WithLabelValues(r.labels...)
	e.active.WithLabelValues(r.labels...).Set(1)
	return r
}

// with is the run's labels followed by extra.
func (r *Run) with(extra ...string) []string {
	return append(r.labels[:len(r.labels):len(r.labels)], extra...)
}

// Reporter is the run as a loadgen.Reporter: its intervals and progress.
func (r *Run) Reporter() loadgen.Reporter { return runReporter{r} }

type runReporter struct{ r *Run }

func (rr runReporter) Interval(iv results.Interval) error {
	rr.r.Interval(iv)
	return nil
}

func (rr runReporter) Event(e loadgen.Event) {
	if e.Kind == loadgen.EventProgress {
		rr.r.Progress(e.Progress())
	}
}

// Progress adds what the counts in p have grown by since the last call
// (loadgen.EventProgress).
func (r *Run) Progress(p loadgen.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, last := r.e, r.last
	add := func(c *prometheus.CounterVec, now, before int64, extra ...string) {
		if d := now - before; d > 0 {
			c.WithLabelValues(r.with(extra...)...).Add(float64(d))
		}
	}
	add(e.payments, p.Offered, last.Offered, OutcomeOffered)
	add(e.payments, p.Store.Processed, last.Store.Processed, OutcomeProcessed)
	add(e.deliveries, p.Cycles.Deliveries, last.Cycles.Deliveries)
	add(e.cycles, p.Cycles.Acquired, last.Cycles.Acquired, OutcomeAcquired)
	add(e.cycles, p.Cycles.NotAcquired, last.Cycles.NotAcquired, OutcomeNotAcquired)
	add(e.notAcquired, p.Cycles.NotAcquired, last.Cycles.NotAcquired)
	before := last.Cycles.ErrorMap()
	for class, n := range p.Cycles.ErrorMap() {
		add(e.errs, n, before[class], class)
	}
	for _, k := range unsafeKinds(p.Store) {
		e.unsafe.WithLabelValues(r.with(k.name)...).Set(float64(k.n))
	}
	e.violations.WithLabelValues(r.with("overlaps")...).Set(float64(p.Store.Overlaps))
	e.violations.WithLabelValues(r.with("stale_rejected")...).Set(float64(p.Store.StaleRejected))
	r.last = p
}

type kindCount struct {
	name string
	n    int64
}

// unsafeKinds are the store's unsafe counts by their summary.json names.
func unsafeKinds(c store.Counts) []kindCount {
	return []kindCount{
		{"duplicates", c.Duplicates}, {"lost", c.Lost}, {"overdrafts", c.Overdrafts},
		{"lost_updates", c.LostUpdates}, {"stale_accepted", c.StaleAccepted},
	}
}

// Interval observes the latencies of one measured interval
// (loadgen.Reporter): every value its acquire and total
// histograms recorded, at the lowest value of its HdrHistogram bucket
// (within 0.1% of it), so that a latency of exactly 1ms counts under a
// bucket bound of 1ms as it would observed directly.
func (r *Run) Interval(iv results.Interval) {
	for _, ph := range []struct {
		p results.Phase
		h *prometheus.HistogramVec
	}{{results.Acquire, r.e.acquire}, {results.Total, r.e.total}} {
		h := iv.Hists[ph.p]
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		obs := ph.h.WithLabelValues(r.labels...)
		for _, b := range h.Distribution() {
			v := float64(b.From) / 1e9
			for range b.Count {
				obs.Observe(v)
			}
		}
	}
}

// End marks the run over: not active any more, with its verdict
// (results.VerdictSafe, …; "" for a run that failed: none).
func (r *Run) End(verdict string) {
	r.e.active.WithLabelValues(r.labels...).Set(0)
	if verdict == "" {
		return
	}
	for _, v := range []string{results.VerdictSafe, results.VerdictUnsafe, results.VerdictUnknown} {
		set := 0.0
		if v == verdict {
			set = 1
		}
		r.e.verdict.WithLabelValues(r.with(v)...).Set(set)
	}
}
