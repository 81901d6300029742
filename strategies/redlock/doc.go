package redlock
