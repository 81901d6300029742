package loadgen

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The scenario table holds Scenario, its flags, its YAML keys and
// results.Params together: every field but Variant and FencingStrict is a
// flag named by its YAML key, every field but Name and Variant is a Params
// field, and a scenario with every field changed comes back the same from
// its Params and from its YAML.
func TestScenarioTable(t *testing.T) {
	st := reflect.TypeFor[Scenario]()
	rows := map[string]bool{}
	for _, f := range ScenarioFlags() {
		rows[f.Name] = true
	}
	tagged := map[string]bool{}
	for _, f := range paramFields() {
		tagged[f.key] = true
	}
	for i := range st.NumField() {
		key := st.Field(i).Tag.Get("yaml")
		if key == "" {
			t.Errorf("Scenario.%s has no YAML key", st.Field(i).Name)
			continue
		}
		if flag := strings.ReplaceAll(key, "_", "-"); rows[flag] != (key != "variant" && key != "fencing_strict") {
			t.Errorf("Scenario.%s (%s): flag %q in the table is %v; want a flag for every field but variant and fencing_strict", st.Field(i).Name, key, flag, rows[flag])
		}
		delete(rows, strings.ReplaceAll(key, "_", "-"))
		if tagged[key] != (key != "name" && key != "variant") {
			t.Errorf("Scenario.%s (%s): a results.Params field tagged is %v; want one for every field but name and variant", st.Field(i).Name, key, tagged[key])
		}
	}
	for flag := range rows {
		t.Errorf("flag --%s is no Scenario field's", flag)
	}

	sc := changed(t, DefaultScenario())
	sc.Interval, sc.Fencing, sc.FencingStrict = 300*time.Millisecond, true, true
	back, err := ScenarioOf(sc.Params(), sc.Name, sc.Variant)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, sc) {
		t.Errorf("ScenarioOf(Params()):\n%+v\nwant\n%+v", back, sc)
	}
	b, err := yaml.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	var fromYAML Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&fromYAML); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, sc) {
		t.Errorf("from its YAML:\n%+v\nwant\n%+v", fromYAML, sc)
	}
}

// changed is s with every field set to another value than the default's,
// by its type.
func changed(t *testing.T, s Scenario) Scenario {
	texts := map[reflect.Type]string{
		reflect.TypeFor[Hold]():        "exp:3ms",
		reflect.TypeFor[AccountDist](): "zipf:1.5",
		reflect.TypeFor[RetrySpec]():   "backoff:2ms-40ms",
	}
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case texts[f.Type()] != "":
			x, err := parseAs(f.Type(), texts[f.Type()])
			if err != nil {
				t.Fatal(err)
			}
			f.Set(x)
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			f.SetInt(f.Int() + 7)
		case f.Kind() == reflect.Float64:
			f.SetFloat(f.Float() + 0.25)
		case f.Kind() == reflect.Bool:
			f.SetBool(!f.Bool())
		case f.Kind() == reflect.String:
			f.SetString(f.String() + "x")
		default:
			t.Fatalf("Scenario.%s: no changed value for its type %s", v.Type().Field(i).Name, f.Type())
		}
	}
	return s
}

// Params records what the summary says of a scenario in file units, and
// keeps the defaults of fields a file left out.
func TestParamsUnits(t *testing.T) {
	sc := DefaultScenario()
	sc.FencingStrict = true
	sc.Fencing = false
	p := sc.Params()
	if p.TTLNs != int64(DefaultTTL) || p.Hold != DefaultHold || p.IntervalNs != int64(IntervalLength) || p.FencingStrict {
		t.Errorf("Params: ttl_ns %d, hold %q, interval_ns %d, fencing_strict %v; want %d, %q, %d (the default interval), false (strict needs fencing)",
			p.TTLNs, p.Hold, p.IntervalNs, p.FencingStrict, int64(DefaultTTL), DefaultHold, int64(IntervalLength))
	}
	old := p
	old.Funding, old.AcquireTimeoutNs, old.Retry = 0, 0, "" // a file from before trials
	back, err := ScenarioOf(old, "base", "")
	if err != nil {
		t.Fatal(err)
	}
	if d := DefaultScenario(); back.Funding != d.Funding || back.AcquireTimeout != d.AcquireTimeout || back.Retry != d.Retry {
		t.Errorf("ScenarioOf a file without funding, acquire timeout and retry: %v, %v, %v; want the defaults", back.Funding, back.AcquireTimeout, back.Retry)
	}
	bad := p
	bad.Hold = "soon"
	if _, err := ScenarioOf(bad, "base", ""); err == nil || !strings.HasPrefix(err.Error(), "hold: ") {
		t.Errorf("ScenarioOf with hold %q: %v; want an error naming hold", bad.Hold, err)
	}
}
