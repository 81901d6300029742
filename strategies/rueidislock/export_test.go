package rueidislock

// Older is older, for the tests.
var Older = older
