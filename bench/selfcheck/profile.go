package selfcheck

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/lockbench/lockbench/internal/usage"
)

// minProfileSamples is the fewest samples a measurement's label must have
// for the profile split to be printed: below it a share is too coarse.
const minProfileSamples = 200

// profileSplit counts one measurement label's CPU profile samples: inside
// the client library's calls, and outside them.
type profileSplit struct {
	library, rest int64
}

// restShare is the share of the samples outside the library.
func (s profileSplit) restShare() float64 {
	return float64(s.rest) / float64(s.library+s.rest)
}

// ratioTo is the CPU per cycle of s over that of base, each measured with
// its library's samples as the yardstick (see the package doc).
func (s profileSplit) ratioTo(base profileSplit) float64 {
	return (1 + float64(s.rest)/float64(s.library)) / (1 + float64(base.rest)/float64(base.library))
}

// splitProfile counts the samples of p labelled measure=bare and
// measure=lockbench (measured) by whether a frame of the sample's stack is
// a function of one of the library's packages (import path prefixes).
// Unlabelled samples (the Go runtime's own goroutines: the garbage
// collector's workers, the scheduler between goroutines) are in neither:
// the process runs them for both clients alike.
func splitProfile(p *profile.Profile, library []string) (bare, ours profileSplit) {
	inLibrary := func(s *profile.Sample) bool {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				for _, pkg := range library {
					if strings.HasPrefix(line.Function.Name, pkg) {
						return true
					}
				}
			}
		}
		return false
	}
	for _, s := range p.Sample {
		var split *profileSplit
		switch labels := s.Label["measure"]; {
		case len(labels) == 0:
			continue
		case labels[0] == "bare":
			split = &bare
		case labels[0] == "lockbench":
			split = &ours
		default:
			continue
		}
		n := int64(1)
		if len(s.Value) > 0 {
			n = s.Value[0] // the "samples" count
		}
		if inLibrary(s) {
			split.library += n
		} else {
			split.rest += n
		}
	}
	return bare, ours
}

// roundsProfile is the CPU profile of a comparison's counted rounds, kept
// in memory for the split and written to --cpuprofile's file when given.
type roundsProfile struct {
	buf     bytes.Buffer
	file    *os.File // nil without --cpuprofile
	on      bool
	stopped bool
}

// openRoundsProfile creates --cpuprofile's file (path, when set) before any
// round runs, so that a path that cannot be written fails at once.
func openRoundsProfile(path string) (*roundsProfile, error) {
	rp := &roundsProfile{}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, usage.Errorf("cpuprofile", "%v", err)
		}
		rp.file = f
	}
	return rp, nil
}

// start starts profiling. Without --cpuprofile, a profile already running
// in the process (a test's -cpuprofile) only means no split is printed.
func (rp *roundsProfile) start() error {
	if err := pprof.StartCPUProfile(&rp.buf); err != nil {
		if rp.file != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}
	rp.on = true
	return nil
}

// stop stops profiling and writes the file, and returns the profile,
// parsed, when there is one (the first call; later ones do nothing).
func (rp *roundsProfile) stop() (*profile.Profile, error) {
	if rp.stopped {
		return nil, nil
	}
	rp.stopped = true
	if rp.on {
		pprof.StopCPUProfile()
		rp.on = false
	}
	if rp.file != nil {
		_, err := rp.file.Write(rp.buf.Bytes())
		if cerr := rp.file.Close(); err == nil {
			err = cerr
		}
		rp.file = nil
		if err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	if rp.buf.Len() == 0 {
		return nil, nil
	}
	return profile.Parse(bytes.NewReader(rp.buf.Bytes()))
}

// printProfileSplit prints the split's closing line (see above), with the
// harness's µs from the bare client's measured CPU per cycle (bareUs, the
// median); nothing when either label has too few samples.
func (c comparison) printProfileSplit(w io.Writer, bare, ours profileSplit, bareUs float64) {
	if bare.library+bare.rest < minProfileSamples || ours.library+ours.rest < minProfileSamples || bare.library == 0 || ours.library == 0 {
		return
	}
	r := ours.ratioTo(bare)
	fmt.Fprintf(w, "cpu per cycle by profile (within each measurement, %s's calls as the yardstick; far steadier than the rates under steal; blind to the harness slowing those calls): outside %s, %s %.1f%% of %d samples, lockbench %.1f%% of %d; lockbench / %s %.2f, the harness %+.1f µs\n",
		c.bareShort, c.bareShort, c.bare, 100*bare.restShare(), bare.library+bare.rest, 100*ours.restShare(), ours.library+ours.rest, c.bare, r, (r-1)*bareUs)
}
