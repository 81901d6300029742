// Package atomicfile replaces a file's content in one rename, so that a
// reader sees either the old file or the new one, never half of one: a
// person (or lockbench report) opening a run directory while a run is still
// writing it, an interrupted run, libfaketime reading a Redis node's clock
// offset on every clock read.
//
// It is the one atomic writer of lockbench; results, servers and the command
// all write through it.
//
// Caveats: there is no fsync. The rename is atomic for every reader and
// against an interrupted process, which is all lockbench needs, but after a
// machine crash the file may be old or empty; syncing the hundreds of files
// of a run directory between runs would only disturb the next run's servers
// (Postgres shares the disk). The temporary file lives in the target's
// directory (a rename across file systems is not atomic), is named
// ".BASE.tmp-RANDOM", and is removed when anything fails. Errors name the
// file but carry no package prefix: callers add their own.
package atomicfile
