// Package runner holds the job-side half of the ping protocol: the code
// behind "vigil ping" and "vigil run".
//
// A job reports to its check by requesting the check's ping URL,
// <base>/ping/<uuid> or <base>/ping/<ping-key>/<slug>, optionally followed by
// /start, /fail, /log or /<exit-status>, with an optional rid (run id) query
// parameter and an optional body (see docs: healthchecks-behaviour.md §8).
//
// The package has three parts, each usable without the CLI:
//
//   - URLs: [ResolveURL] turns what a user types (a full URL, a UUID or
//     <ping-key>/<slug>) into a check's ping URL, and [PingURL] adds the
//     suffix and rid.
//   - Pinging: [Client.Ping] sends one ping with bounded retries (network
//     errors, 408, 429 and 5xx are retried with exponential backoff and jitter,
//     honouring Retry-After; other answers are final).
//   - Running: [Run] wraps a command like runitor does: a start ping, the
//     command with its output streamed through and the tail kept in a [Ring],
//     signals forwarded, and an exit-status ping carrying that tail. The
//     monitor being down never changes the command's exit code.
package runner
