// Package adapter is a strategy backed by an adapter: a child process,
// written in any language, that wraps a lock library and speaks lockbench's
// adapter protocol (docs/adapters.md), newline-delimited JSON on its
// stdin and stdout.
//
// Each Strategy starts its own adapter process (lockbench builds one
// Strategy per instance, so every instance has its own, in goroutine and
// in process instance mode), passes it the servers' endpoints in the
// environment variables `lockbench up` prints, reads its hello, and then
// multiplexes the instance's concurrent calls over the one pipe by
// request id.
//
// Caveats:
//   - An adapter that exits, sends no hello within HelloTimeout, prints a
//     line that is not the protocol, or does not answer a request within
//     AnswerGrace after the request's deadline is lost: the process is
//     killed and never restarted, and that call and every later one fail
//     with an error wrapping strategies.ErrAdapterLost.
//   - A `lost` event (the library reported a held lock lost) makes that
//     lease's Release return an error wrapping strategies.ErrNotOwner,
//     which the load generator counts as lost_lock: once per lease.
//   - The child gets SIGKILL when the thread that started it exits
//     (Pdeathsig), and must exit on stdin EOF, so that no adapter outlives
//     lockbench. It stays in its parent's process group: pausing an
//     instance process's group stops its adapter too (but not in the
//     terminal's foreground group, out of Ctrl-C's reach).
package adapter
