package project

// rebuildAll builds every stale namespace's part now, as the build loop
// does a moment after events: lookups never build, so a test that changes
// Secrets and looks keys up calls it in between.
func (r *Registry) rebuildAll() { r.rebuild(r.pace.Now(), true) }
