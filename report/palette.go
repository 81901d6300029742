package report

import (
	"hash/fnv"
	"image/color"

	"github.com/lockbench/lockbench/results"
	"github.com/lockbench/lockbench/strategies"
)

// palette gives each built-in strategy its colour, in every chart, from
// chart to chart and run to run. Colours are from the Okabe-Ito palette
// (distinguishable with the common forms of colour blindness) and, past
// its seven, from Paul Tol's. TestPaletteCoversBuiltin keeps it in step
// with the registry's strategies.
var palette = map[string]color.RGBA{
	"nolock":               {0x00, 0x00, 0x00, 0xff}, // black: the control
	"mutex":                {0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	"setnx":                {0xd5, 0x5e, 0x00, 0xff}, // vermillion
	"redislock":            {0x33, 0x22, 0x88, 0xff}, // indigo (Tol)
	"setnx-watchdog":       {0x88, 0xcc, 0xee, 0xff}, // cyan (Tol)
	"rueidislock":          {0xee, 0x33, 0x77, 0xff}, // magenta (Tol vibrant)
	"fencing":              {0x00, 0x9e, 0x73, 0xff}, // bluish green
	"redlock":              {0xe6, 0x9f, 0x00, 0xff}, // orange
	"redsync":              {0xcc, 0x66, 0x77, 0xff}, // rose (Tol)
	"etcd":                 {0x00, 0x72, 0xb2, 0xff}, // blue
	"zookeeper":            {0x11, 0x77, 0x33, 0xff}, // green (Tol)
	"pg-onconflict":        {0x56, 0xb4, 0xe9, 0xff}, // sky blue
	"pg-advisory":          {0xaa, 0x44, 0x99, 0xff}, // purple (Tol)
	"mysql-get-lock":       {0x99, 0x77, 0x00, 0xff}, // ochre (Tol medium-contrast dark yellow)
	"pg-unique":            {0xdd, 0xcc, 0x77, 0xff}, // sand (Tol): no lock, the database's constraint
	"pg-for-update":        {0x66, 0x33, 0x33, 0xff}, // dark red (Tol dark): no lock server, the account row's lock
	"pg-optimistic":        {0x44, 0xaa, 0x99, 0xff}, // teal (Tol): no lock, a version check
	"queue":                {0x99, 0x99, 0x33, 0xff}, // olive (Tol): no lock, the broker's dedupe
	"node-redlock":         {0x88, 0x22, 0x55, 0xff}, // wine (Tol muted): adapters from here on
	"node-redis-semaphore": {0xee, 0x88, 0x66, 0xff}, // light orange (Tol light)
	"py-redis-lock":        {0xbb, 0xcc, 0x33, 0xff}, // pear (Tol light)
	"py-kazoo":             {0x44, 0xbb, 0x99, 0xff}, // mint (Tol light)
}

// fallbackColors are for strategies missing from palette, picked by a hash
// of the name so that such a strategy too keeps its colour. Yellow is
// among them, not in palette, because it is the hardest to see on white.
var fallbackColors = []color.RGBA{
	{0xf0, 0xe4, 0x42, 0xff}, // Okabe-Ito yellow
	{0x99, 0x99, 0x99, 0xff}, // grey
	{0xee, 0x66, 0x77, 0xff}, // red (Tol bright)
	{0xcc, 0xbb, 0x44, 0xff}, // yellow (Tol bright)
}

// StrategyColor returns the colour of strategy name in every chart.
func StrategyColor(name string) color.RGBA {
	if c, ok := palette[name]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fallbackColors[h.Sum32()%uint32(len(fallbackColors))]
}

// strategyRank orders strategies as the registry does (strategies.Rank).
func strategyRank(name string) int { return strategies.Rank(name) }

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
