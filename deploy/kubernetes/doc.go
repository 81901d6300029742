// Package kubernetes holds the manifests that run lockbench on a
// Kubernetes cluster: secret.yaml (the agents' token and the endpoints of
// the servers under test), agents.yaml (a StatefulSet of agents behind a
// headless Service), coordinator.yaml (a Job running one command with
// --agents, its run directory on a volume) and results.yaml (a pod to
// copy that directory out). The image they name is built from the
// Dockerfile at the repository's top.
//
// It has no code. Its test decodes every manifest strictly into the
// Kubernetes API's own Go types (k8s.io/api), so that a misspelt field
// fails, and checks that the pieces fit: the Service selects the agents'
// pods and is headless, the coordinator's --agents names it and its port,
// every container states its resource requests, and the token comes from
// the Secret. Caveat: no cluster runs them here (no cluster and no
// container engine on these machines), so what the API server would
// check beyond the types (admission, quotas) is not.
package kubernetes
