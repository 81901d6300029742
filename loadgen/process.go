// What the coordinator and an instance process share: the environment an
// instance process is started with, its configuration, and the messages it
// reports on stdout (childMsg, with its histograms as sparseHist).

package loadgen

import (
	"encoding/json"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// Instance processes (`--instance-mode process`) are the same binary
// re-executed with these environment variables; MaybeRunChild, called first
// thing in main (and in TestMain), turns such a process into an instance.
const (
	envChild    = "LOCKBENCH_CHILD"
	envInstance = "LOCKBENCH_INSTANCE"
	childName   = "instance"
	statsEvery  = 250 * time.Millisecond
	// envStoreToken is the agent's token (package loadgen/agent's
	// TokenEnv), which an instance on an agent presents to the store.
	envStoreToken = "LOCKBENCH_AGENT_TOKEN"
	readyTimeout  = 20 * time.Second
	// EnvInstanceProfile, set to a directory, makes each instance process
	// write its CPU profile there (instance-ID-PID.pprof) for its whole
	// life: where a process-mode run's CPU goes beyond the coordinator's
	// own profile (--cpuprofile, or go test's -cpuprofile).
	EnvInstanceProfile = "LOCKBENCH_INSTANCE_CPUPROFILE"
)

// An instance process takes its deliveries on stdin as fixed-size binary
// records, batched (transport.go); reaches the coordinator's store over a
// local socket with store.Client's pipelined binary frames; and reports
// its counters and latency histograms on stdout every statsEvery, as gob
// (a few messages a second: not worth a codec of its own).

// childMsg is what an instance process reports to the coordinator.
type childMsg struct {
	Kind string // "ready", "stats", "done", "error"
	Err  string
	// Lost: Err wraps strategies.ErrAdapterLost.
	Lost   bool
	Counts Snapshot
	Hists  []sparseHist // one per phase: what was recorded since the last stats
	// Outcomes is the acquire latency by outcome since the last stats.
	Outcomes []sparseHist
	// History is the holders' events since the last stats, when the run
	// keeps a history (InstanceConfig.History), on the process's clock.
	History []clientEvent
}

// ChildConfig is the configuration an instance process is started with,
// reaching its store at storeAddr.
func ChildConfig(cfg InstanceConfig, storeAddr string) ([]byte, error) {
	return json.Marshal(struct {
		InstanceConfig
		StoreAddr string
	}{cfg, storeAddr})
}

// sparseHist is a latency histogram (results.NewHistogram's bounds) as
// its non-zero buckets: a stats message carries a few hundred numbers per
// histogram where its snapshot has tens of thousands, most of them zero,
// which gob would encode four times a second per phase per instance.
type sparseHist struct {
	Len   int // the snapshot's number of buckets; 0 for an empty histogram
	Index []int32
	Count []int64
}

func sparseOf(h *hdrhistogram.Histogram) sparseHist {
	if h.TotalCount() == 0 {
		return sparseHist{}
	}
	snap := h.Export()
	sp := sparseHist{Len: len(snap.Counts)}
	for i, c := range snap.Counts {
		if c != 0 {
			sp.Index = append(sp.Index, int32(i))
			sp.Count = append(sp.Count, c)
		}
	}
	return sp
}

// mergeInto adds s to h (a histogram of results.NewHistogram's bounds):
// each bucket's count recorded at a value of that bucket. (Rebuilding the
// whole snapshot and merging it walked every one of its tens of thousands
// of buckets twice: an eighth of the coordinator's CPU in a process-mode
// run.)
func (s sparseHist) mergeInto(h *hdrhistogram.Histogram) {
	if s.Len == 0 || len(s.Index) != len(s.Count) {
		return
	}
	vs := bucketValues()
	for _, i := range s.Index {
		if i < 0 || int(i) >= len(vs) {
			s.mergeSnapshot(h) // a bucket past the table: the long way
			return
		}
	}
	for k, i := range s.Index {
		_ = h.RecordValues(vs[i], s.Count[k])
	}
}

// mergeSnapshot adds s to h by way of a whole snapshot.
func (s sparseHist) mergeSnapshot(h *hdrhistogram.Histogram) {
	counts := make([]int64, s.Len)
	for k, i := range s.Index {
		if i >= 0 && int(i) < len(counts) {
			counts[i] = s.Count[k]
		}
	}
	h.Merge(hdrhistogram.Import(&hdrhistogram.Snapshot{
		LowestTrackableValue:  results.MinLatencyNs,
		HighestTrackableValue: results.MaxLatencyNs,
		SignificantFigures:    results.SigFigs,
		Counts:                counts,
	}))
}

// bucketValues is, for each bucket of a results.NewHistogram's snapshot
// up to the one of its highest trackable value, the lowest value it
// holds: the library's own Distribution of a histogram with that value
// recorded, whose bars come one per bucket in snapshot order.
var bucketValues = sync.OnceValue(func() []int64 {
	h := results.NewHistogram()
	_ = h.RecordValue(results.MaxLatencyNs)
	bars := h.Distribution()
	vs := make([]int64, len(bars))
	for i, b := range bars {
		vs[i] = b.From
	}
	return vs
})

// childErr is an instance process's error as the coordinator rebuilds it:
// its message, and strategies.ErrAdapterLost when it wrapped that.
type childErr struct {
	msg  string
	lost bool
}

func (e *childErr) Error() string { return e.msg }

func (e *childErr) Unwrap() error {
	if e.lost {
		return strategies.ErrAdapterLost
	}
	return nil
}
