package adapter

// request is a line lockbench sends.
type request struct {
	ID        int64  `json:"id"`
	Op        string `json:"op"`
	Key       string `json:"key,omitempty"`
	TTLMs     int64  `json:"ttl_ms,omitempty"`
	TimeoutMs *int64 `json:"timeout_ms,omitempty"`
	Lock      int64  `json:"lock,omitempty"`
	Target    int64  `json:"target,omitempty"`
}

// Request ops.
const (
	opAcquire = "acquire"
	opRelease = "release"
	opExtend  = "extend"
	opCancel  = "cancel"
)

// message is a line an adapter sends after its hello: an answer (ID set)
// or an event.
type message struct {
	ID      *int64 `json:"id"`
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Message string `json:"message"`
	Token   int64  `json:"token"`
	Waited  bool   `json:"waited"`
	ValidMs *int64 `json:"valid_ms"`
	Event   string `json:"event"`
	Lock    int64  `json:"lock"`
	Key     string `json:"key"`
}

// Error classes of answers.
const (
	errNotAcquired = "not_acquired"
	errUnavailable = "unavailable"
	errTimeout     = "timeout"
	errNotOwner    = "not_owner"
	errCancelled   = "cancelled"
	errOther       = "error"
)

// eventLost is the event an adapter sends when its library reports a held
// lock lost.
const eventLost = "lost"
