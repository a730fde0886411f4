// Package monitor is Vigil's monitoring domain: when a check's next ping is
// due, when it goes down, and which state changes are flips. It is pure Go
// (time in, values out: no clock, no I/O, no Kubernetes types), so the
// controller, the ping handler and the HTTP API all compute the same answers.
//
// # The model in one paragraph
//
// A check is its Config (what the user asked for: timeout or schedule,
// grace, manual_resume) plus its Facts (what happened), and everything else
// is derived. The facts live in the ping store (package store), which calls
// these functions inside the transaction that records them, and have three
// writers, each owning its own fields: the ping path records pings
// (LastPing, LastPingFailed, LastStart, LastStartRID, LastDuration) with
// [Config.RecordPing]; the API records pause and resume (PausedAt,
// ResumedAt) with [Config.Pause] and [Config.Resume]; the reconciler (the
// store's observation after every write, and the deadline loop's when a
// deadline comes) records the state it last saw (State, StateSince) with
// [Config.Observe]. The status shown to users is never stored as truth:
// [Config.Status] derives it from the facts at a given instant, as the
// reference service computes status at read time, so the three writers
// never have to agree on anything but the facts. The latest of PausedAt and
// ResumedAt is the epoch: a ping or start at or before it no longer counts
// (a pause ends a run in progress, a resume forgets the last ping). A check
// is paused when its last pause is newer than its last resume and no ping
// has counted since. The reconciler finds flips by comparing the
// derived status with the state it recorded last: into down from anything
// else is a flip (reason "fail" at the failing ping, or "timeout" at the
// deadline it missed, however late it is noticed), and out of down into up or
// grace is a flip at the ping that caused it; new→up and paused→up are not
// flips, and neither are pause and resume. Once the reconciler has recorded a
// check down it stays down until a ping arrives (sticky down), even if a
// configuration change moves its deadline, as the reference stores down and
// an update never changes status. [Config.NextChange] tells the reconciler the
// exact instant to requeue at.
//
// # The alert policy
//
// Config's FailureThreshold, RecoveryThreshold, MaxRuntime and MinRuntime
// (policy.go) refine the rules below without changing them at their zero
// values: rule 5 holds once FailureThreshold failed runs in a row have been
// counted, a run in progress is bounded by MaxRuntime instead of grace,
// and a down check stays down until RecoveryThreshold successes in a row.
// Observe records the missed runs it counts (Failures, MissedAt) alongside
// State; RecordPing keeps the counts a ping changes.
//
// # Derivation
//
// Status at an instant now, in order (reference section 7.1):
//
//  1. a run in progress (a LastStart after the epoch) and now at or after
//     LastStart+Grace: down;
//  2. recorded down after the epoch and no ping since the down began: down
//     (sticky; it comes before paused because a paused check whose run
//     overran is stored down, no longer paused, in the reference);
//  3. paused: paused;
//  4. no counting ping: new;
//  5. the last ping was a failure: down;
//  6. the due time E (LastPing+Timeout, or the schedule's first instant after
//     LastPing) is none: up; now at or after E+Grace: down; now at or after
//     E: grace; otherwise up.
//
// Rules 1 and 6 together make an up check down from its deadline on.
//
// [Config.NextPing] is the grace start the API shows as next_ping (E, or the
// outstanding start if earlier; for new and paused checks only the start) and
// [Config.Deadline] is NextPing+Grace, the reference's alert_after. Both
// depend on the facts only, not on the instant.
//
// # Who calls what
//
//   - The ping path: f, res := cfg.RecordPing(f, ping); write f's ping fields
//     and log the ping as res.Kind at res.At (with res.Duration). A paused
//     check with ManualResume turns every ping into "ign".
//   - The API: cfg.Status(f, now), cfg.NextPing(f), f.Started(),
//     f.DisplayedLastPing() and f.LastDuration for a check's JSON;
//     cfg.Pause(f, now) and cfg.Resume(f, now) (ErrNotPaused → 409), writing
//     PausedAt or ResumedAt.
//   - The reconciler: f, flip := cfg.Observe(f, now); write State and
//     StateSince, record and notify the flip, and requeue at
//     cfg.NextChange(f, now).
//
// Apply runs one event through the owning writer and then Observe, which is
// how the tests describe the state machine. Observe sees only the latest
// facts: if a check goes down and up again between two observations (a fail
// and then a success before the reconciler runs), no flip is recorded for it.
//
// # Instants and precision
//
// The store keeps instants with microsecond precision, as a Check's status
// shows them. RecordPing, Pause and Resume never record an instant that
// would order a fact before one it already sees (replicas' clocks differ
// slightly): a ping is recorded just after the epoch and not before the
// previous ping, the start, or the instant a recorded down began; a pause
// or resume not before any fact. The bump used is one microsecond, so it
// survives the round trip through the store.
package monitor
