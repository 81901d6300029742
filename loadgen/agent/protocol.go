package agent

import (
	"bufio"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/lockbench/lockbench/internal/handshake"
)

// Protocol is the agent protocol's number. A coordinator and an agent
// talk only when theirs agree: it covers this package's frames and
// everything the agent relays unread (the delivery records of
// loadgen/transport.go, the instance's gob stats, the store's frames), so
// it changes with any of them.
const Protocol = 1

// TokenEnv names the environment variable holding the shared token. The
// agent refuses to start without it; a coordinator without it, or with
// another, is refused.
const TokenEnv = "LOCKBENCH_AGENT_TOKEN"

// A connection opens with the coordinator's hello: magic, the protocol
// number, the connection's kind, then the token and the coordinator's
// lockbench version, each a u16 length and its bytes. The agent answers
// with a status byte and a u16-length message: on success a JSON
// helloReply, on refusal the reason. After that a control connection
// carries gob-encoded requests and replies; an instance connection a JSON
// spawnReq (u32 length) answered the same way, then the instance's raw
// streams: delivery records one way, the instance's reports the other.
const (
	magic = "LBA"

	kindControl  = 1
	kindInstance = 2

	statusOK      = 0
	statusRefused = 1

	// maxField bounds a token, version or message: 4 KB.
	maxField = 4096
	// maxSpawn bounds a spawn request: 1 MB.
	maxSpawn = 1 << 20
)

// HandshakeTimeout bounds a connection's hello and its answer (and an
// instance connection's spawn request): handshake.Timeout, 5 seconds. A
// connection that has not sent an accepted hello by then is closed.
const HandshakeTimeout = handshake.Timeout

// MaxPending bounds the connections an agent holds before their hellos
// are accepted: handshake.MaxPending, 512. Beyond it the oldest is closed
// to make room, so that silent connections never keep a coordinator out.
const MaxPending = handshake.MaxPending

// streamBuffer bounds the socket buffers of an instance's delivery stream:
// the coordinator's send buffer and the agent's receive buffer, 64 KB each
// (the kernel doubles what is asked). Left to autotuning, loopback TCP grew
// them to megabytes, and a closed loop filled them: some 300,000
// deliveries queued between the coordinator and an instance, which the
// instance then worked through for a minute and more after a Ctrl-C. Bounded,
// the stream holds about what a local process's pipe does, which is
// still many times what a network round trip needs in flight.
const streamBuffer = 64 << 10

// boundStream applies streamBuffer to conn's TCP connection (under TLS
// and the agent's handshake.Conn too) with set: the TCPConn's
// SetWriteBuffer or SetReadBuffer.
func boundStream(conn net.Conn, set func(*net.TCPConn, int) error) {
	if tc, ok := handshake.Unwrap(conn).(*net.TCPConn); ok {
		_ = set(tc, streamBuffer)
	}
}

// ErrRefused is wrapped by the error a coordinator gets when an agent
// refuses its connection (a bad token, another protocol).
var ErrRefused = errors.New("agent: connection refused by agent")

// hello is the first thing a coordinator sends.
type hello struct {
	Protocol byte
	Kind     byte
	Token    string
	Version  string
}

// helloReply is an agent's answer to an accepted hello.
type helloReply struct {
	Version string // the agent's lockbench version
	Host    string // its host name
	Session uint64 // a control connection's session id
	CPUs    int    // its processor count
}

func writeField(w io.Writer, s string) error {
	if len(s) > maxField {
		s = s[:maxField]
	}
	var n [2]byte
	binary.LittleEndian.PutUint16(n[:], uint16(len(s)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err := io.WriteString(w, s)
	return err
}

func readField(r io.Reader) (string, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	l := int(binary.LittleEndian.Uint16(n[:]))
	if l > maxField {
		return "", fmt.Errorf("agent: field of %d bytes", l)
	}
	b := make([]byte, l)
	_, err := io.ReadFull(r, b)
	return string(b), err
}

func writeHello(w io.Writer, h hello) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(magic)
	bw.WriteByte(h.Protocol)
	bw.WriteByte(h.Kind)
	if err := writeField(bw, h.Token); err != nil {
		return err
	}
	if err := writeField(bw, h.Version); err != nil {
		return err
	}
	return bw.Flush()
}

// errNotAgent is a hello without the magic: not a coordinator at all.
var errNotAgent = errors.New("not a lockbench coordinator (bad magic)")

// readHello reads a hello. A wrong magic or protocol is an error whose
// message is the refusal's reason.
func readHello(r io.Reader) (hello, error) {
	var head [len(magic) + 2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return hello{}, err
	}
	if string(head[:len(magic)]) != magic {
		return hello{}, errNotAgent
	}
	h := hello{Protocol: head[len(magic)], Kind: head[len(magic)+1]}
	var err error
	if h.Token, err = readField(r); err != nil {
		return h, err
	}
	if h.Version, err = readField(r); err != nil {
		return h, err
	}
	return h, nil
}

// check says why an agent holding token refuses h, or "" when it does
// not. The token is compared in constant time and never named.
func (h hello) check(token string) string {
	switch {
	case h.Protocol != Protocol:
		return fmt.Sprintf("protocol mismatch: coordinator speaks agent protocol %d (lockbench %s), agent speaks %d (lockbench %s)", h.Protocol, h.Version, Protocol, Version())
	case h.Kind != kindControl && h.Kind != kindInstance:
		return fmt.Sprintf("unknown connection kind %d", h.Kind)
	case h.Token == "":
		return "no token: set " + TokenEnv + " on the coordinator to the agent's token"
	case subtle.ConstantTimeCompare([]byte(h.Token), []byte(token)) != 1:
		return "bad token: " + TokenEnv + " differs between coordinator and agent"
	}
	return ""
}

func writeStatus(w io.Writer, status byte, msg string) error {
	if _, err := w.Write([]byte{status}); err != nil {
		return err
	}
	return writeField(w, msg)
}

// readStatus reads an answer: the JSON body of an accepted one into v
// (when v is not nil), or an ErrRefused error with the agent's reason.
func readStatus(r io.Reader, v any) error {
	var st [1]byte
	if _, err := io.ReadFull(r, st[:]); err != nil {
		return err
	}
	msg, err := readField(r)
	if err != nil {
		return err
	}
	if st[0] != statusOK {
		return fmt.Errorf("%w: %s", ErrRefused, msg)
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal([]byte(msg), v)
}

func writeJSONStatus(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeStatus(w, statusOK, string(b))
}

// spawnReq asks an agent, on an instance connection, to start an
// instance process.
type spawnReq struct {
	Session uint64 // the control connection's session it belongs to
	Key     uint64 // the coordinator's name for it, unique in the session
	// Config is the instance's configuration, passed to the process as
	// loadgen's instance environment variable unread.
	Config json.RawMessage
	// Procs is GOMAXPROCS for the process; 0 leaves it to the agent.
	Procs int
}

func writeSpawn(w io.Writer, s spawnReq) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(append(n[:], b...)); err != nil {
		return err
	}
	return nil
}

func readSpawn(r io.Reader) (spawnReq, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return spawnReq{}, err
	}
	l := binary.LittleEndian.Uint32(n[:])
	if l > maxSpawn {
		return spawnReq{}, fmt.Errorf("agent: spawn request of %d bytes", l)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(r, b); err != nil {
		return spawnReq{}, err
	}
	var s spawnReq
	err := json.Unmarshal(b, &s)
	return s, err
}

// Control requests (Op) on a control connection.
const (
	opPing   = "ping"   // liveness, both ways
	opClock  = "clock"  // the agent's clock, for the offset
	opSignal = "signal" // SIGSTOP or SIGCONT one of the session's instances
)

// request is a coordinator's control request.
type request struct {
	ID     uint64
	Op     string
	Key    uint64 // opSignal: the instance
	Signal string // opSignal: "stop" or "cont"
}

// reply answers the request with the same ID.
type reply struct {
	ID  uint64
	Err string
	// NowNs is the agent's wall clock when it answered (opClock).
	NowNs int64
}
