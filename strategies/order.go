package strategies

import (
	"hash/fnv"
	"image/color"
)

// canon is the one place that orders the built-in strategies and gives each
// its colour: listings, tables, legends and safety grids all follow it. The
// control comes first, then roughly from weakest to strongest lock. Colours
// are from the Okabe-Ito palette (distinguishable with the common forms of
// colour blindness) and, past its seven, from Paul Tol's; a strategy keeps
// its colour from chart to chart and run to run.
var canon = []struct {
	name  string
	color color.RGBA
}{
	{"nolock", color.RGBA{0x00, 0x00, 0x00, 0xff}},         // black: the control
	{"mutex", color.RGBA{0xcc, 0x79, 0xa7, 0xff}},          // reddish purple
	{"setnx", color.RGBA{0xd5, 0x5e, 0x00, 0xff}},          // vermillion
	{"redislock", color.RGBA{0x33, 0x22, 0x88, 0xff}},      // indigo (Tol)
	{"setnx-watchdog", color.RGBA{0x88, 0xcc, 0xee, 0xff}}, // cyan (Tol)
	{"fencing", color.RGBA{0x00, 0x9e, 0x73, 0xff}},        // bluish green
	{"redlock", color.RGBA{0xe6, 0x9f, 0x00, 0xff}},        // orange
	{"redsync", color.RGBA{0xcc, 0x66, 0x77, 0xff}},        // rose (Tol)
	{"etcd", color.RGBA{0x00, 0x72, 0xb2, 0xff}},           // blue
	{"zookeeper", color.RGBA{0x11, 0x77, 0x33, 0xff}},      // green (Tol)
	{"pg-onconflict", color.RGBA{0x56, 0xb4, 0xe9, 0xff}},  // sky blue
	{"pg-advisory", color.RGBA{0xaa, 0x44, 0x99, 0xff}},    // purple (Tol)
	{"pg-unique", color.RGBA{0xdd, 0xcc, 0x77, 0xff}},      // sand (Tol): no lock, the database's constraint
	{"queue", color.RGBA{0x99, 0x99, 0x33, 0xff}},          // olive (Tol): no lock, the broker's dedupe
}

// fallbackColors are for strategies missing from canon, picked by a hash of
// the name so that such a strategy too keeps its colour. Yellow is among
// them, not in canon, because it is the hardest to see on white.
var fallbackColors = []color.RGBA{
	{0xf0, 0xe4, 0x42, 0xff}, // Okabe-Ito yellow
	{0x99, 0x99, 0x99, 0xff}, // grey
	{0x88, 0x22, 0x55, 0xff}, // wine (Tol)
	{0x44, 0xaa, 0x99, 0xff}, // teal (Tol)
}

// Builtin lists the built-in strategies in canonical order.
func Builtin() []string {
	out := make([]string, len(canon))
	for i, c := range canon {
		out[i] = c.name
	}
	return out
}

// Rank is the position of name in the canonical order; strategies not in it
// rank after every built-in one (and sort among themselves by name).
func Rank(name string) int {
	for i, c := range canon {
		if c.name == name {
			return i
		}
	}
	return len(canon)
}

// Color is the colour of strategy name in every chart.
func Color(name string) color.RGBA {
	if r := Rank(name); r < len(canon) {
		return canon[r].color
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fallbackColors[h.Sum32()%uint32(len(fallbackColors))]
}
