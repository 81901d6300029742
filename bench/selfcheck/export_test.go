package selfcheck

// What the commands' end-to-end tests (command_test.go, package
// selfcheck_test, which drives the real command through package cli) use.
var (
	CompareTable = compareTable
	FindPgbench  = findPgbench
)
