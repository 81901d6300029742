package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"os"
	"regexp"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// HlogName is the name of the interval log of phase p of the run whose
// file id (see FileIDs) is id: "<id>.<phase>.hlog", in a run directory's
// HlogDir.
func HlogName(id string, p Phase) string { return id + "." + p.String() + ".hlog" }

// FileIDs returns a file-name id for every summary, in order: its ID(), and
// for the second and later runs with the same ID (the points of a sweep)
// the ID followed by ".2", ".3", …. Appending runs never changes the ids of
// the runs before them, so a directory can be rewritten as runs accumulate.
func FileIDs(ss []Summary) []string {
	ids := make([]string, len(ss))
	seen := map[string]int{}
	for i := range ss {
		id := ss[i].ID()
		seen[id]++
		if n := seen[id]; n > 1 {
			id += "." + strconv.Itoa(n)
		}
		ids[i] = id
	}
	return ids
}

// WriteHlog writes phase p of r as an HdrHistogram interval log, one
// histogram per Interval, readable by HistogramLogAnalyzer and by
// hdrhistogram-go's HistogramLogReader (see ReadHlog). Values are
// nanoseconds; the log's interval maxima are in milliseconds, as the format
// expects. Timestamps are seconds since the start of the measured run; when
// the run's wall-clock start is known (Summary.StartUnixNs) it is written as
// the log's StartTime and BaseTime (whole seconds, as hdrhistogram-go
// writes them). A run without intervals is written as one interval holding
// its whole-run histogram, tagged WholeRunTag.
func WriteHlog(w io.Writer, r Run, p Phase) error {
	lw := hdrhistogram.NewHistogramLogWriter(w)
	if err := writeHlogHeader(lw, r, p, hlogFingerprint(r, p)); err != nil {
		return fmt.Errorf("results: writing hlog: %w", err)
	}
	ivs, wholeRun := loggedIntervals(r)
	for _, iv := range ivs {
		h := iv.Hists[p]
		if h == nil {
			h = NewHistogram()
		}
		if err := writeInterval(lw, h, iv, wholeRun); err != nil {
			return fmt.Errorf("results: writing hlog: %w", err)
		}
	}
	return nil
}

// writeHlogHeader writes what an interval log of phase p of r starts
// with: the format version, a comment naming the run with its fingerprint
// fp, the start and base times when known, and the legend.
func writeHlogHeader(lw *hdrhistogram.HistogramLogWriter, r Run, p Phase, fp string) error {
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	comment := fmt.Sprintf("[lockbench %s phase=%s fingerprint=%s: values in ns, timestamps in s since the run started]",
		r.Summary.ID(), p, fp)
	if err := lw.OutputComment(comment); err != nil {
		return err
	}
	if start := r.Summary.StartUnixNs; start > 0 {
		ms := start / 1e6
		if err := lw.OutputStartTime(ms); err != nil {
			return err
		}
		if err := lw.OutputBaseTime(ms); err != nil {
			return err
		}
	}
	return lw.OutputLegend()
}

// WholeRunTag tags the one histogram of an interval log written for a run
// without intervals: it spans the whole run and is not a time series.
const WholeRunTag = "whole-run"

// writeInterval logs h as interval iv. The log writer reads the interval's
// times and tag from the histogram itself, so they are set for the call and
// then put back: the caller's histograms are left as they were.
func writeInterval(lw *hdrhistogram.HistogramLogWriter, h *hdrhistogram.Histogram, iv Interval, wholeRun bool) error {
	start, end, tag := h.StartTimeMs(), h.EndTimeMs(), h.Tag()
	defer func() {
		h.SetStartTimeMs(start)
		h.SetEndTimeMs(end)
		h.SetTag(tag)
	}()
	h.SetStartTimeMs(iv.StartNs / 1e6)
	h.SetEndTimeMs(iv.EndNs / 1e6)
	if wholeRun {
		h.SetTag(WholeRunTag)
	}
	return lw.OutputIntervalHistogram(h)
}

// loggedIntervals are the intervals an hlog holds: r's, or one spanning the
// whole run when it has none but has histograms.
func loggedIntervals(r Run) (ivs []Interval, wholeRun bool) {
	if len(r.Intervals) > 0 {
		return r.Intervals, false
	}
	for _, h := range r.Total {
		if h != nil && h.TotalCount() > 0 {
			return []Interval{{StartNs: 0, EndNs: r.Summary.DurationNs, Hists: r.Total}}, true
		}
	}
	return nil, false
}

// hlogFingerprint identifies what WriteHlog writes for r and p: a hash of
// the summary and of every interval's span and count. WriteData skips
// rewriting a log whose fingerprint has not changed, so writing a
// directory's data after each run does not re-encode every earlier run.
// It is computed for every earlier run after each one, so it must stay
// cheap: a histogram's count is a field but its Max scans every bucket,
// so intervals are told apart by span and count alone (the summary, with
// the run's start time and percentiles, already tells runs apart).
func hlogFingerprint(r Run, p Phase) string {
	h := fnv.New64a()
	if data, err := json.Marshal(r.Summary); err == nil {
		h.Write(data)
	}
	ivs, wholeRun := loggedIntervals(r)
	fmt.Fprintf(h, "|%s|%v|%d", p, wholeRun, len(ivs))
	for _, iv := range ivs {
		var n int64
		if hp := iv.Hists[p]; hp != nil {
			n = hp.TotalCount()
		}
		fmt.Fprintf(h, "|%d,%d,%d", iv.StartNs, iv.EndNs, n)
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// hasFingerprint reports whether the interval log at path was written with
// fingerprint fp; it reads only the log's header.
func hasFingerprint(path, fp string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	return bytes.Contains(head[:n], []byte(" fingerprint="+fp+":"))
}

var reBaseTime = regexp.MustCompile(`(?m)^#\[BaseTime: ([\d.]+)`)

// ReadHlog reads an interval log written by WriteHlog with hdrhistogram-go's
// HistogramLogReader and returns its intervals with the histograms in
// Hists[p] (the other phases are nil). Interval times are relative to the
// start of the run, to the millisecond. The histogram of a run logged
// without intervals comes back as one interval tagged WholeRunTag.
func ReadHlog(r io.Reader, p Phase) ([]Interval, error) {
	var out []Interval
	err := eachHlogInterval(r, p, func(iv Interval) {
		out = append(out, iv)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachHlogInterval is ReadHlog handing each interval to fn as it is
// decoded, so that the caller keeps only what it needs of it (each
// histogram decoded is one of NewHistogram's, about 180 KB).
func eachHlogInterval(r io.Reader, p Phase, fn func(Interval)) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("results: reading hlog: %w", err)
	}
	// The library's reader adds BaseTime to every timestamp and does not
	// say what it was; read it here to turn timestamps back to relative.
	var baseMs int64
	if m := reBaseTime.FindSubmatch(data); m != nil {
		sec, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			return fmt.Errorf("results: reading hlog: bad BaseTime %q", m[1])
		}
		baseMs = int64(sec * 1000)
	}
	lr := hdrhistogram.NewHistogramLogReader(bytes.NewReader(data))
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			return fmt.Errorf("results: reading hlog: %w", err)
		}
		if h == nil {
			return nil
		}
		iv := Interval{
			StartNs: (h.StartTimeMs() - baseMs) * 1e6,
			EndNs:   (h.EndTimeMs() - baseMs) * 1e6,
		}
		iv.Hists[p] = h
		fn(iv)
	}
}

// HlogStream keeps a run's intervals on disk as the run goes, one file per
// phase, each interval encoded as it closes (loadgen.Options.StreamIntervals
// is its Write), so that a long run's intervals do not stay in memory:
// each is a histogram per phase of about 180 KB, where its encoded line
// is a few hundred bytes. Once the run is over, WriteHlog writes the run's
// interval log of a phase (what WriteHlog writes for a run holding the
// same intervals, fingerprint aside) from what was streamed, and Close
// removes the files. It is for one goroutine at a time.
type HlogStream struct {
	files [NumPhases]*os.File
	bufs  [NumPhases]*bufio.Writer
	lws   [NumPhases]*hdrhistogram.HistogramLogWriter
	// spans hashes every interval's span and counts, per phase, for the
	// fingerprint.
	spans [NumPhases]hash.Hash64
	n     int
}

// NewHlogStream starts a stream whose files are in dir (created if need
// be), named "*.<phase>.hlog.part".
func NewHlogStream(dir string) (*HlogStream, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results: hlog stream: %w", err)
	}
	s := &HlogStream{}
	for p := range NumPhases {
		f, err := os.CreateTemp(dir, "*."+p.String()+".hlog.part")
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("results: hlog stream: %w", err)
		}
		s.files[p] = f
		s.bufs[p] = bufio.NewWriter(f)
		s.lws[p] = hdrhistogram.NewHistogramLogWriter(s.bufs[p])
		s.spans[p] = fnv.New64a()
	}
	return s, nil
}

// Write encodes iv, one line per phase. It does not keep or change iv's
// histograms.
func (s *HlogStream) Write(iv Interval) error {
	for p := range NumPhases {
		h := iv.Hists[p]
		if h == nil {
			h = NewHistogram()
		}
		if err := writeInterval(s.lws[p], h, iv, false); err != nil {
			return fmt.Errorf("results: hlog stream: %w", err)
		}
		fmt.Fprintf(s.spans[p], "|%d,%d,%d", iv.StartNs, iv.EndNs, h.TotalCount())
	}
	s.n++
	return nil
}

// Len is the number of intervals written.
func (s *HlogStream) Len() int { return s.n }

// WriteHlog writes the interval log of phase p of r, whose intervals are
// the ones streamed (r's own are ignored): WriteHlog's header, then every
// interval written. A stream with no interval writes r as WriteHlog does
// (its whole-run histogram).
func (s *HlogStream) WriteHlog(w io.Writer, r Run, p Phase) error {
	if s.n == 0 {
		r.Intervals = nil
		return WriteHlog(w, r, p)
	}
	lw := hdrhistogram.NewHistogramLogWriter(w)
	if err := writeHlogHeader(lw, r, p, s.Fingerprint(r, p)); err != nil {
		return fmt.Errorf("results: writing hlog: %w", err)
	}
	f := s.files[p]
	if err := s.bufs[p].Flush(); err != nil {
		return fmt.Errorf("results: writing hlog: %w", err)
	}
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return fmt.Errorf("results: writing hlog: %w", err)
	}
	return nil
}

// Fingerprint is what identifies the log WriteHlog writes for r and p (see
// hlogFingerprint): the summary and the streamed intervals' spans and
// counts.
func (s *HlogStream) Fingerprint(r Run, p Phase) string {
	h := fnv.New64a()
	if data, err := json.Marshal(r.Summary); err == nil {
		h.Write(data)
	}
	fmt.Fprintf(h, "|%s|streamed|%d|%x", p, s.n, s.spans[p].Sum64())
	return strconv.FormatUint(h.Sum64(), 16)
}

// Close removes the stream's files.
func (s *HlogStream) Close() error {
	var errs []error
	for _, f := range s.files {
		if f == nil {
			continue
		}
		errs = append(errs, f.Close(), os.Remove(f.Name()))
	}
	return errors.Join(errs...)
}
