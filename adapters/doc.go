// Package adapters holds the shipped adapters' scripts (node/ and python/,
// see docs/adapters.md), embedded in the lockbench binary, and unpacks them
// for a built binary: on first use, to a directory per version of their
// content under the user's cache directory
// (os.UserCacheDir()/lockbench/adapters/<hash>), where `npm ci` installs
// the Node adapters' pinned dependencies.
//
// # Dependencies
//
// The first use of a Node adapter needs npm and the npm registry
// (or npm's own cache); Python adapters need Debian's python3 packages
// (python3-redis, python3-kazoo), which nothing here installs.
package adapters
