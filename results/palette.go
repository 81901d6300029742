package results

import (
	"hash/fnv"
	"image/color"
)

// StrategyOrder is the order strategies appear in in tables, legends and
// grids: the control first, then roughly from weakest to strongest lock.
// Strategies not listed follow, in the order they were met.
var StrategyOrder = []string{"nolock", "mutex", "setnx", "fencing", "redlock", "etcd", "pg-onconflict"}

// StrategyColors gives every strategy one fixed colour, shared by every
// chart, from the Okabe-Ito palette (distinguishable with the common forms
// of colour blindness). Yellow is kept for strategies not listed here
// because it is the hardest to see on white.
var StrategyColors = map[string]color.RGBA{
	"nolock":        {0x00, 0x00, 0x00, 0xff}, // black: the control
	"mutex":         {0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	"setnx":         {0xd5, 0x5e, 0x00, 0xff}, // vermillion
	"fencing":       {0x00, 0x9e, 0x73, 0xff}, // bluish green
	"redlock":       {0xe6, 0x9f, 0x00, 0xff}, // orange
	"etcd":          {0x00, 0x72, 0xb2, 0xff}, // blue
	"pg-onconflict": {0x56, 0xb4, 0xe9, 0xff}, // sky blue
}

// fallbackColors are for strategies missing from StrategyColors, picked by
// a hash of the name so a strategy keeps its colour from chart to chart.
var fallbackColors = []color.RGBA{
	{0xf0, 0xe4, 0x42, 0xff}, // Okabe-Ito yellow
	{0x99, 0x99, 0x99, 0xff}, // grey
	{0x88, 0x22, 0x55, 0xff}, // wine (Tol)
	{0x44, 0xaa, 0x99, 0xff}, // teal (Tol)
}

// StrategyColor returns the colour of strategy name in every chart.
func StrategyColor(name string) color.RGBA {
	if c, ok := StrategyColors[name]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fallbackColors[h.Sum32()%uint32(len(fallbackColors))]
}

// strategyRank orders strategies by StrategyOrder; unknown ones sort after,
// among themselves by name.
func strategyRank(name string) int {
	for i, s := range StrategyOrder {
		if s == name {
			return i
		}
	}
	return len(StrategyOrder)
}

// FaultOrder is the order faults appear in in tables and the safety grid;
// faults not listed follow, sorted by name.
var FaultOrder = []string{"none", "pause", "slow", "kill-node", "restart-node", "partition", "clock-jump"}

func faultRank(name string) int {
	if name == "" {
		name = FaultNone
	}
	for i, f := range FaultOrder {
		if f == name {
			return i
		}
	}
	return len(FaultOrder)
}
