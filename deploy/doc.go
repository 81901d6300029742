// Package deploy holds what lockbench ships for running its servers
// elsewhere: grafana/ (a dashboard for --metrics-addr) and, at the top of
// the repository, docker-compose.yml. It has no code; its test loads the
// compose file with the Compose Specification's own Go library
// (compose-go), strictly and with every profile, and checks that every
// published port binds to 127.0.0.1 only, as the file promises.
package deploy
