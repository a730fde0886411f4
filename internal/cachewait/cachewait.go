// Package cachewait lets a writer wait until the manager's informer cache
// has caught up with its write, so that a client's next read, which the
// cache serves, sees it. Used by the Management API after its writes and by
// the ping endpoint before it answers.
package cachewait

import "time"

// DefaultTimeout bounds a wait: after it the answer goes out anyway.
const DefaultTimeout = 5 * time.Second
