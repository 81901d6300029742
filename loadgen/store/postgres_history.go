package store

// recorderRef boxes a Recorder for an atomic pointer.
type recorderRef struct{ r Recorder }

// SetRecorder makes p send its events to r (nil: none). Set it between
// runs, not while workers call Enter and Finish.
func (p *Postgres) SetRecorder(r Recorder) {
	if r == nil {
		p.rec.Store(nil)
		return
	}
	p.rec.Store(&recorderRef{r})
}

// record sends ev to the recorder, if any, in the lane of ev's key.
func (p *Postgres) record(rec *recorderRef, ev *Event) {
	l := keyLane(ev.Key)
	p.lanes[l].Lock()
	defer p.lanes[l].Unlock()
	rec.r.Record(l, ev)
}

// keyLane is the Record lane of a lock key's events: a hash (FNV-1a) of
// the key.
func keyLane(key string) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return int(h % Lanes)
}
