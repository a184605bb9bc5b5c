"""Service plumbing shared by the four services: config, logging, metrics, gRPC, NATS, Postgres."""
