package report

import (
	"testing"

	"github.com/lockbench/lockbench/strategies"
	_ "github.com/lockbench/lockbench/strategies/all"
)

// The tests draw as lockbench does: with the registry's orders and colours.
func init() {
	Styles = func(name string) Style {
		info, _ := strategies.Registered(name)
		return Style{Order: info.Order, Color: info.Color}
	}
}

// Every built-in strategy has a colour and a place of its own: no two share
// either.
func TestStylesCoverBuiltin(t *testing.T) {
	colours, orders := map[string]string{}, map[int]string{}
	for _, name := range strategies.Builtin() {
		st := Styles(name)
		if _, ok := parseColor(st.Color); !ok {
			t.Errorf("%s: colour %q; want #rrggbb", name, st.Color)
		} else if other, dup := colours[st.Color]; dup {
			t.Errorf("%s and %s share colour %s", name, other, st.Color)
		}
		colours[st.Color] = name
		if st.Order <= 0 {
			t.Errorf("%s: order %d; want a place of its own (> 0)", name, st.Order)
		} else if other, dup := orders[st.Order]; dup {
			t.Errorf("%s and %s share order %d", name, other, st.Order)
		}
		orders[st.Order] = name
	}
	if len(colours) < 20 {
		t.Errorf("%d built-in strategies; want all of them (strategies/all)", len(colours))
	}
}

// A strategy with no style of its own sorts after the others, by name, and
// keeps one colour.
func TestStyleFallback(t *testing.T) {
	if strategyRank("consul") <= strategyRank("py-kazoo") {
		t.Errorf("unknown strategy ranks %d, before py-kazoo's %d", strategyRank("consul"), strategyRank("py-kazoo"))
	}
	if StrategyColor("consul") != StrategyColor("consul") {
		t.Error("an unknown strategy's colour changed from call to call")
	}
	if c, want := StrategyColor("setnx"), (Style{Color: "#d55e00"}); c != mustColor(t, want.Color) {
		t.Errorf("setnx: %v; want its Info.Color %s", c, want.Color)
	}
	saved := Styles
	Styles = nil
	defer func() { Styles = saved }()
	if strategyRank("setnx") != strategyRank("nolock") {
		t.Error("with no Styles every strategy should rank alike (then by name)")
	}
}

func mustColor(t *testing.T, s string) any {
	t.Helper()
	c, ok := parseColor(s)
	if !ok {
		t.Fatalf("bad colour %q", s)
	}
	return c
}
