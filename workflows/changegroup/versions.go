package changegroup

// versionNothingLost guards the shape in which a group hands back every build it
// held and did not deliver, keeps overrides that arrive during an activity, uses a
// branch unique per group, bounds forge outages and writes its final status until
// it is written. Runs recorded before it replay with the default version.
const versionNothingLost = "nothing-lost"

// versionAutoRelease guards the batching shape: the workflow releases on its own
// when spec.autoRelease's window or maxWait passes, and an automatic group hands
// back builds that arrive after its release. Only groups with an autoRelease (or
// automatic ones) ask for it, so manual groups keep their command sequence.
const versionAutoRelease = "auto-release"

// versionCIStart guards the shape in which a released group looks for the pipeline
// its release should have started: it reads the released head's check runs and
// commit statuses every poll interval until one appears, and when Pipelines as
// Code waits for approval, or nothing reports within CIStartGrace, it says so (the
// CIStarted condition, an Event, one PR comment). It is asked for once, at the
// release, so groups released before it keep their command sequence.
const versionCIStart = "ci-start"

// versionSpecAfterEnd guards ignoring a spec change that arrives after the group
// ended (while its end is still written): before it, a member removed then was
// dropped and its build handed back even when the merged PR had delivered it, a
// second nudge of a merged digest. Asked only on that path.
const versionSpecAfterEnd = "spec-after-end"

// versionForgeSaysEnd guards the shape in which a merged or closed PR event is a
// hint: the workflow reads the PR on the forge and ends only on what the forge
// says (a forged or misrouted webhook ends nothing). Runs recorded before it end on
// the event itself.
const versionForgeSaysEnd = "forge-says-end"

// versionVerifyBuilds guards the shape in which a build is verified when it enters
// the group (activities/buildcheck: its build run, else its Component's image,
// else a Snapshot): whoever reaches Temporal can signal any digest. The verdict is
// recorded in the state and never asked again; a refused build is written nowhere
// (not collected, not handed back) and leaves a Warning Event on the group. A run
// started (not continued) with a state keeps none of it: its builds are verified
// like signals. Runs recorded before it keep every build they receive.
const versionVerifyBuilds = "verify-builds"
