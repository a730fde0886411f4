// Package badge implements Vigil's public status badges exactly as the
// reference service (Healthchecks) does: the signed badge URLs listed by
// GET /api/v3/badges/, the parsing and verification of those URLs when a
// client fetches them, the aggregation of check statuses into a badge state,
// and the byte-exact rendering of the three badge formats (SVG, JSON and
// Shields.io endpoint JSON).
//
// # Keys and signatures
//
// A project (a Kubernetes namespace) has two badge secrets in its project
// Secret: a badge key, which is public and is the first URL segment (the
// contract's <project_token>), and a signing secret, which never leaves the
// cluster and plays the role of the reference's SECRET_KEY for that project.
//
// The signature of a tag (the contract's <badge_key> segment) is the first
// 8 characters of
//
//	base64url-nopad(HMAC-SHA1(key = SHA1(badgeKey || signingSecret), msg = tag))
//
// which is Django's salted HMAC with the badge key as salt. The pseudo-tag
// "*" (all checks in the project) is signed like any other tag. The
// signature binds the badge key and the tag, but not the format or the
// number of states, so one signature serves all six URLs of a tag.
//
// # URL forms
//
//	{base}/badge/<badge key>/<sig>[-2]/<enc(tag)>.<fmt>   one tag
//	{base}/badge/<badge key>/<sig>[-2].<fmt>              "*", all checks
//	{base}/b/<states>/<check badge key>.<fmt>             one check
//
// fmt is svg, json or shields. A "-2" suffix on the signature selects the
// two-state badge (up, down: checks in their grace period count as up);
// without it the badge has three states (up, late, down). enc(tag)
// percent-encodes every byte except A-Za-z0-9 and _.-~ and then encodes the
// result once more, so "db@dc1" becomes "db%2540dc1": the router sees the
// path decoded once ("db%40dc1") and decodes the tag a second time.
//
// When a badge URL is fetched, only the first 8 characters of the signature
// segment are compared with the expected signature, and the segment means
// "two states" only when it is exactly 10 characters ending in "-2". So
// "<sig>XYZ" is accepted as a three-state badge, as in the reference.
//
// # Aggregation and rendering
//
// A badge counts the matching checks; "down" wins over everything, a check
// in its grace period makes the badge "late" only in three-state mode (and
// only while no check is down), and new and paused checks count as up. See
// [Aggregate]. [JSON], [Shields] and [SVG] render the result with the
// reference's exact bytes (Python's JSON separators and \u escapes, Django's
// HTML escaping, Python's float formatting in the SVG). One divergence: a
// single check's label ([CheckLabel]) is never its UUID, which the
// reference shows for an unnamed check, because the UUID is the check's ping
// credential and a badge is public.
//
// The package is pure: no I/O, no clock, no Kubernetes. The HTTP layer looks
// up the project by [Request.BadgeKey], verifies the signature with that
// project's signing secret, computes the statuses of the matching checks and
// writes the rendered body with [Format.ContentType] and [CacheControl].
package badge
