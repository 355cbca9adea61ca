// Package renovate_test is the contract test of the Renovate PipelineRun: the run
// nudgeflow writes, run by test/plrunner with the real (pinned) Renovate against a
// real registry (test/ociregistry) and real git on each forge, must open the pull
// request build-service's Renovate would open. Each case runs on every forge
// test/landingforge starts, and prints one `renovate-e2e forge=<name> ...` line
// per forge and case.
package renovate_test
