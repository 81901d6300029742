package report

import (
	"fmt"
	"hash/fnv"
	"image/color"
	"math"

	"github.com/lockbench/lockbench/results"
)

// Style is how the charts and tables show a strategy: its place in legends,
// tables and grids (lower first; 0 after every strategy that has one) and
// its colour ("#rrggbb"; "" for one picked by a hash of its name).
type Style struct {
	Order int
	Color string
}

// Styles gives each strategy its Style; the command layer sets it from the
// strategies' registry (Info.Order, Info.Color). Nil, or a zero Style,
// orders a strategy by name after the others and colours it by its name.
var Styles func(strategy string) Style

func styleOf(name string) Style {
	if Styles == nil {
		return Style{}
	}
	return Styles(name)
}

// fallbackColors are for strategies with no colour of their own, picked by
// a hash of the name so that such a strategy too keeps its colour. Yellow
// is among them (no built-in strategy has it) because it is the hardest to
// see on white.
var fallbackColors = []color.RGBA{
	{0xf0, 0xe4, 0x42, 0xff}, // Okabe-Ito yellow
	{0x99, 0x99, 0x99, 0xff}, // grey
	{0xee, 0x66, 0x77, 0xff}, // red (Tol bright)
	{0xcc, 0xbb, 0x44, 0xff}, // yellow (Tol bright)
}

// StrategyColor returns the colour of strategy name in every chart.
func StrategyColor(name string) color.RGBA {
	if c, ok := parseColor(styleOf(name).Color); ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fallbackColors[h.Sum32()%uint32(len(fallbackColors))]
}

// parseColor reads "#rrggbb".
func parseColor(s string) (color.RGBA, bool) {
	var c color.RGBA
	if len(s) != 7 || s[0] != '#' {
		return c, false
	}
	if _, err := fmt.Sscanf(s[1:], "%02x%02x%02x", &c.R, &c.G, &c.B); err != nil {
		return c, false
	}
	c.A = 0xff
	return c, true
}

// strategyRank is where a strategy goes in legends and tables.
func strategyRank(name string) int {
	if o := styleOf(name).Order; o > 0 {
		return o
	}
	return math.MaxInt
}

// FaultOrder is the order faults appear in in tables and the safety grid;
// faults not listed follow, sorted by name.
var FaultOrder = []string{"none", "pause", "slow", "kill-node", "restart-node", "partition", "clock-jump", "failover"}

func faultRank(name string) int {
	if name == "" {
		name = results.FaultNone
	}
	for i, f := range FaultOrder {
		if f == name {
			return i
		}
	}
	return len(FaultOrder)
}
