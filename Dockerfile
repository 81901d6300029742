# lockbench's image: the one static binary, for the coordinator and the
# agents alike (deploy/kubernetes/). Untested here: the machines lockbench
# is developed on have no container engine.
#   docker build -t lockbench:latest .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/lockbench ./cmd/lockbench

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lockbench /usr/local/bin/lockbench
ENTRYPOINT ["/usr/local/bin/lockbench"]
