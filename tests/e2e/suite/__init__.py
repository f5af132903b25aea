"""The task suite on real small models (run.py). It lives with the end-to-end tests rather than in
bench/ because it shares their server, environment and helpers, and it measures what mm gets a
model to do, not how fast: bench/'s benchmarks are run at every `make test` (`--quick`), where
this suite has no model to run on."""
