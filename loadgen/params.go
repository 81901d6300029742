package loadgen

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/lockbench/lockbench/results"
)

// Params is the whole scenario as summary.json records it (results.Params),
// without the run's fault and store transport, which the run sets: each
// field tagged scenario:"KEY" takes the Scenario field of YAML key KEY, a
// duration in nanoseconds and a Hold, AccountDist or RetrySpec as its text.
// ScenarioOf is its inverse.
func (s *Scenario) Params() results.Params {
	sc := *s
	sc.FencingStrict = s.Fencing && s.FencingStrict
	sc.Interval = s.LatencyInterval()
	var p results.Params
	from, to := reflect.ValueOf(sc), reflect.ValueOf(&p).Elem()
	for _, f := range paramFields() {
		v := from.Field(f.scenario)
		if m, ok := v.Interface().(encoding.TextMarshaler); ok {
			b, _ := m.MarshalText()
			to.Field(f.param).SetString(string(b))
			continue
		}
		to.Field(f.param).Set(v.Convert(f.paramType))
	}
	return p
}

// ScenarioOf rebuilds the scenario named name (and variant) from p, the
// inverse of Scenario.Params: what p leaves out (a field it records with
// omitempty, zero in files that did not record it: funding, acquire timeout
// and retry) keeps its default. It fails when a field's text (hold, account
// distribution, retry) does not parse.
func ScenarioOf(p results.Params, name, variant string) (Scenario, error) {
	sc := DefaultScenario()
	sc.Name, sc.Variant = name, variant
	from, to := reflect.ValueOf(p), reflect.ValueOf(&sc).Elem()
	for _, f := range paramFields() {
		v := from.Field(f.param)
		if f.omitempty && v.IsZero() {
			continue
		}
		dst := to.Field(f.scenario)
		if u, ok := dst.Addr().Interface().(encoding.TextUnmarshaler); ok {
			if err := u.UnmarshalText([]byte(v.String())); err != nil {
				return sc, fmt.Errorf("%s: %w", f.key, err)
			}
			continue
		}
		dst.Set(v.Convert(dst.Type()))
	}
	return sc, nil
}

// paramField is a results.Params field and the Scenario field it records.
type paramField struct {
	key             string // the Scenario field's YAML key
	param, scenario int
	paramType       reflect.Type
	omitempty       bool
}

// paramFields pairs results.Params' fields with Scenario's by their tags,
// once.
var paramFields = sync.OnceValue(func() []paramField {
	pt := reflect.TypeFor[results.Params]()
	var fs []paramField
	for i := range pt.NumField() {
		key := pt.Field(i).Tag.Get("scenario")
		if key == "" {
			continue // set by the run: its fault, its store transport
		}
		fs = append(fs, paramField{key: key, param: i, scenario: scenarioField(key), paramType: pt.Field(i).Type,
			omitempty: strings.HasSuffix(pt.Field(i).Tag.Get("json"), ",omitempty")})
	}
	return fs
})
