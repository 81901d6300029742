package loadgen

import (
	"sync"
	"time"

	"github.com/lockbench/lockbench/results"
)

// drainEvery is how often the collector drains the workers' latency
// records into the interval under way: 20 ms.
const drainEvery = 20 * time.Millisecond

// collector gathers the workers' latency records into intervals, off their
// hot path: it drains every instance every drainEvery into the interval
// under way, so that a recorder's buffer holds milliseconds of values, and
// closes an interval every latency interval. A closed interval goes to the
// Reporter and, unless the run streams its intervals, into Intervals;
// intervals that end in the warmup are dropped.
type collector struct {
	insts        []instance
	measureStart time.Time
	rep          Reporter
	stream       bool // Options.StreamIntervals

	// cur is the interval under way; reuse, when the intervals stream,
	// the histograms the Reporter has had, which serve the next.
	// The collector's goroutine's, and stop's once it has ended.
	cur, reuse results.PhaseSet

	mu        sync.Mutex // total for progress, while the goroutine runs
	total     results.PhaseSet
	intervals []results.Interval
	lastEndNs int64 // where the next interval starts
	logErr    error // the Reporter's first

	done chan struct{}
	wg   sync.WaitGroup
}

func newCollector(rep Reporter, stream bool, insts []instance, measureStart time.Time) *collector {
	return &collector{
		insts: insts, measureStart: measureStart, rep: rep, stream: stream,
		cur: results.NewPhaseSet(), total: results.NewPhaseSet(), done: make(chan struct{}),
	}
}

// start runs the collector until stop: a drain every drainEvery (or
// every interval, if shorter), an interval closed every interval, and
// tick called after each.
func (c *collector) start(interval time.Duration, tick func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		d := time.NewTicker(min(drainEvery, interval))
		defer d.Stop()
		for {
			select {
			case <-c.done:
				return
			case <-d.C:
				c.drain()
			case now := <-t.C:
				c.collect(now)
				tick()
			}
		}
	}()
}

// stop ends the collector's goroutine and closes the last interval at end.
func (c *collector) stop(end time.Time) {
	close(c.done)
	c.wg.Wait()
	c.collect(end)
}

// drain moves what the workers recorded into the interval under way.
func (c *collector) drain() {
	for _, in := range c.insts {
		if g, ok := in.(gatherer); ok {
			g.Gather(c.cur)
		} else {
			in.Swap(c.cur)
		}
	}
}

// collect closes the interval under way at now.
func (c *collector) collect(now time.Time) {
	for _, in := range c.insts {
		in.Swap(c.cur)
	}
	iv := c.cur
	if next := c.reuse; next[0] != nil {
		next.Reset()
		c.cur = next
	} else {
		c.cur = results.NewPhaseSet()
	}
	endNs := int64(now.Sub(c.measureStart))
	if endNs < 0 {
		return // still in the warmup: drop it
	}
	c.mu.Lock()
	c.total.Merge(iv)
	c.mu.Unlock()
	closed := results.Interval{StartNs: c.lastEndNs, EndNs: endNs, Hists: iv}
	c.lastEndNs = endNs
	// Not under c.mu: a Reporter may ask for the progress (p99).
	if err := c.rep.Interval(closed); err != nil && c.logErr == nil {
		c.logErr = err
	}
	if !c.stream {
		c.intervals = append(c.intervals, closed)
		return
	}
	c.reuse = iv
}

// p99 is the total latency's 99th percentile so far.
func (c *collector) p99() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.total[results.Total].ValueAtQuantile(99))
}
