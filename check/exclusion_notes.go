package check

import (
	"fmt"
	"strings"
)

// maxKeyNotes is the most lines about single keys a run's notes hold: 10.
const maxKeyNotes = 10

// exclusionNotes are the lines that say what the exclusion check ex
// found, and the disagreements in it: keys where the store counted an
// overlap that porcupine found exclusive.
func exclusionNotes(ex *Exclusion) ([]string, []Disagreement) {
	if ex.Skipped != "" {
		return []string{"exclusion: skipped, " + ex.Skipped}, nil
	}
	var notes, keyNotes []string
	var dis []Disagreement
	tally := map[KeyOutcome]int{}
	for _, r := range ex.Results {
		tally[r.Outcome]++
		if r.Outcome == KeyOK && r.StoreOverlap {
			dis = append(dis, Disagreement{Field: FieldExclusion, Key: r.Key})
		}
		if s := keyNote(r); s != "" {
			keyNotes = append(keyNotes, s)
		}
	}
	if tally[KeyOK] == ex.Keys {
		notes = append(notes, "exclusion: ok, "+plural(ex.Keys, "key"))
	} else {
		var parts []string
		for _, o := range []struct {
			outcome KeyOutcome
			say     string
		}{{KeyOK, "ok"}, {KeyViolated, "violated"}, {KeyUnknown, "unknown"}, {KeyPartial, "partly checked"}} {
			if n := tally[o.outcome]; n > 0 {
				parts = append(parts, group(n)+" "+o.say)
			}
		}
		checked := plural(len(ex.Results), "key") + " checked"
		if len(ex.Results) < ex.Keys {
			checked = fmt.Sprintf("%s of %s keys checked (%s)", group(len(ex.Results)), group(ex.Keys), FlagMaxKeys)
		}
		notes = append(notes, fmt.Sprintf("exclusion: %s: %s", checked, strings.Join(parts, ", ")))
	}
	if len(keyNotes) > maxKeyNotes {
		more := len(keyNotes) - maxKeyNotes
		keyNotes = append(keyNotes[:maxKeyNotes], fmt.Sprintf("exclusion: … and %s more", plural(more, "key")))
	}
	return append(notes, keyNotes...), dis
}

// keyNote is the line about key result r, or "" when there is nothing to
// say.
func keyNote(r KeyResult) string {
	where := ""
	if r.StoreOverlap {
		where = ", where the store counted an overlap"
	}
	switch r.Outcome {
	case KeyViolated:
		if !r.StoreOverlap {
			return fmt.Sprintf("exclusion: %s violated: lease taken over after its holder left", r.Key)
		}
		return fmt.Sprintf("exclusion: %s violated%s", r.Key, where)
	case KeyUnknown:
		return fmt.Sprintf("exclusion: %s unknown: porcupine ran out of time (%s)%s", r.Key, r.Cut, where)
	case KeyPartial:
		return fmt.Sprintf("exclusion: %s checked on %s of %s operations (%s)%s", r.Key, group(r.Checked), group(r.Ops), r.Cut, where)
	}
	return ""
}

// plural is n and noun, in the plural unless n is 1: "3 keys".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return group(n) + " " + noun + "s"
}
