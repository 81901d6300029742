package cli

import (
	"io"
	"testing"
)

// --fault may be repeated, one spec each: run makes one cell per spec
// (a spec with parameters in the variant when there are several), and
// verdicts makes a spec with parameters cells of their own, told apart
// from the designed ones by the variant; a comma list of bare names still
// works.
func TestRepeatedFault(t *testing.T) {
	o, err := parseRun([]string{"--strategy", "setnx", "--fault", "none,pause", "--fault", "pause:schedule=random,every=1s"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range o.cells {
		got = append(got, specString(c.spec)+" ["+c.sc.Variant+"]")
	}
	want := []string{"none []", "pause []", "pause:every=1s,schedule=random [every=1s,schedule=random]"}
	if len(got) != len(want) {
		t.Fatalf("run cells %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("run cell %d = %q; want %q", i, got[i], want[i])
		}
	}

	v, err := parseVerdicts([]string{"--strategy", "setnx", "--fault", "pause", "--fault", "pause:schedule=random,every=1s"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.cases) != 2 {
		t.Fatalf("verdicts cells %d; want 2 (designed and random pause)", len(v.cases))
	}
	if d, r := v.cases[0], v.cases[1]; d.sc.Variant != "" || r.sc.Variant != "every=1s,schedule=random" || !r.spec.Random() || r.sc.Payments != verdictRandomPayments {
		t.Errorf("cells %q (%d payments), %q (%d payments, random %v); want the designed cell without a variant and the random one with its parameters, %d payments",
			d.sc.Variant, d.sc.Payments, r.sc.Variant, r.sc.Payments, r.spec.Random(), verdictRandomPayments)
	}
}
