// Package adapters holds the shipped adapters' scripts (node/, python/ and
// java/, see docs/adapters.md), embedded in the lockbench binary, and
// unpacks them for a built binary: on first use, to a directory per
// version of their content under the user's cache directory
// (os.UserCacheDir()/lockbench/adapters/<hash>/<runtime>), where `npm ci`
// installs the Node adapters' pinned dependencies and javac compiles the
// Java adapters (bounded by NpmTimeout and JavacTimeout). A folder is
// renamed into place only once complete, so an interrupted or failed
// install or compile is made again at the next use.
//
// # Dependencies
//
// The first use of a Node adapter needs npm and the npm registry
// (or npm's own cache); Python adapters need Debian's python3 packages
// (python3-redis, python3-kazoo); the Java adapter needs Debian's JDK
// (default-jdk-headless: javac for the first use, java for every one) and
// Curator's jars (libcurator-recipes-java). Nothing here installs them
// (.ci/install-deps does); a missing one is one line naming its package.
package adapters
