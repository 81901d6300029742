// Package agent runs instance processes on other hosts: `lockbench agent
// --listen HOST:PORT` (Agent) on each load host, and a coordinator's
// sessions with them (Conn, Pool), through which loadgen places its
// instance processes (loadgen.Options.Spawner).
//
// Every connection starts with a hello: the magic, the agent protocol
// number (Protocol: both sides must speak the same), the connection's
// kind, the shared token (TokenEnv; the agent refuses a coordinator
// without it or with another, saying so in one line on both sides, never
// naming it) and the coordinator's lockbench version. TLS is optional
// (TLSFiles), mutual when the agent has a CA for its coordinators. A
// connection whose hello is not in and accepted within HandshakeTimeout
// is closed, and of more than MaxPending connections waiting for theirs
// the oldest is (internal/handshake), so that silent or slow connections
// neither pile up nor keep a coordinator out.
//
// A coordinator opens one control connection per agent (a session): it
// agrees the clock offset (NTP's rule: of clockSamples round trips, the
// shortest one's midpoint), pings every PingEvery, and asks the agent to
// stop or continue one of the session's instances (SIGSTOP/SIGCONT, sent
// by the agent to its own child: no pid ever crosses hosts). Each
// instance is one more connection, whose first message asks the agent to
// start the process (the agent's own binary re-executed as loadgen's
// instance process, in its own process group, killed if the agent dies);
// then the connection carries the process's stdin (delivery records,
// whose intended starts the coordinator has shifted by the offset, so
// that latency measured on the agent's clock is against the coordinator's
// intention) and stdout (its reports) unread. The process reaches the
// coordinator's store over TCP, on an address the coordinator listens on
// for the agents only (Pool.Listen), presenting the same token.
//
// Lifetimes: a session that ends (the coordinator closed it, died, or
// fell silent for IdleTimeout) kills its instances on the agent: none is
// left running. An agent that does not answer for LostAfter, or whose
// connection breaks, is lost to the coordinator (Conn.Lost), which counts
// its instances' deliveries from then on as failed, error class
// loadgen.ErrClassAgentLost, and says so in one line.
//
// When the agent link uses TLS the store link does too (Pool.Listen,
// store.ListenPinned): a certificate made for the run, which the instances
// know by the SHA-256 in the store address the agent link carried them.
//
// Caveats: the clock offset is agreed once per session: a drift of the hosts' clocks
// during a long run is not followed (NTP-disciplined hosts drift
// microseconds per second). With TLS, an agent given by a name (a headless
// Service's, resolved to every pod) is verified against that name, one
// given by its address against the address.
package agent
