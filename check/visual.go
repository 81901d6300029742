package check

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lockbench/lockbench/internal/atomicfile"
	"github.com/lockbench/lockbench/results"
)

// sectionSlack widens the span of the violated chunk when choosing the
// critical sections drawn with it: 1 s, since the store's times are on
// the store's clock (Postgres' own), not the coordinator's.
const sectionSlack = time.Second

// The background colours of the critical sections drawn: one that
// overlapped another, and one that did not.
const (
	colourOverlap = "#f4b6b6"
	colourAlone   = "#d5e8d4"
)

// VisualPath is the path of the visualisation of key in the run with ID
// id in the run directory dir.
func VisualPath(dir, id, key string) string {
	return filepath.Join(dir, HistoryDir, id+"."+results.Sanitize(key)+".exclusion.html")
}

// writeVisual writes porcupine's visualisation of the violated chunk of
// kc to path, with the store's critical sections on the key (events, in
// seq order) drawn as annotations, one row per holder.
func writeVisual(path string, kc *keyCheck, events []storeEvent) error {
	info := *kc.info
	info.AddAnnotations(sections(events, kc.span[0]-int64(sectionSlack), kc.span[1]+int64(sectionSlack)))
	return atomicfile.Write(path, func(w io.Writer) error {
		return porcupine.Visualize(kc.model, info, w)
	})
}

// sections returns the critical sections of events (one key's, in seq
// order) that meet [from, to]: from an enter's at to the at of the finish
// of the same entry (the enter's at alone when it has none).
func sections(events []storeEvent, from, to int64) []porcupine.Annotation {
	type open struct {
		e          *storeEvent
		overlapped bool
	}
	var inside []*open
	var all []*open
	ends := map[*storeEvent]int64{}
	for j := range events {
		e := &events[j]
		if !e.finish {
			o := &open{e: e, overlapped: len(inside) > 0}
			for _, in := range inside {
				in.overlapped = true
			}
			inside = append(inside, o)
			all = append(all, o)
			continue
		}
		for k, in := range inside {
			if in.e.n == e.n {
				ends[in.e] = e.at
				inside = append(inside[:k], inside[k+1:]...)
				break
			}
		}
	}
	var out []porcupine.Annotation
	for _, o := range all {
		end, left := ends[o.e]
		if !left {
			end = o.e.at
		}
		if end < from || o.e.at > to {
			continue
		}
		colour := colourAlone
		if o.overlapped {
			colour = colourOverlap
		}
		out = append(out, porcupine.Annotation{
			Tag:             "store " + clientName(o.e.i, o.e.w),
			Start:           o.e.at,
			End:             end,
			Description:     fmt.Sprintf("n=%d", o.e.n),
			Details:         sectionDetails(o.e, end, left, o.overlapped),
			BackgroundColor: colour,
		})
	}
	return out
}

// sectionDetails is the tooltip of the critical section entered by e.
func sectionDetails(e *storeEvent, end int64, left, overlapped bool) string {
	s := fmt.Sprintf("entry %d by %s, token %d: entered at %d", e.n, clientName(e.i, e.w), e.token, e.at)
	if left {
		s += fmt.Sprintf(", left at %d", end)
	} else {
		s += ", never left"
	}
	s += " (the store's clock)"
	if overlapped {
		s += "; another holder was inside at the same time"
	}
	return s
}
