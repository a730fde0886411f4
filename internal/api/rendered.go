package api

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
)

// renderedChecks keeps the JSON each check was last listed as, by project
// and form (API version, key's access), so that a list of thousands of checks is mostly copied rather than
// rendered again: between two lists few checks change. Rendering was most
// of a long list's cost (about 4 µs a check, two cores).
//
// A check is rendered again when anything its JSON is made of differs
// from the last time: its spec (the object's generation; its UID is the
// map's key, and neither its status nor its labels are shown),
// its view at the list's instant (status, pings, deadlines: what the store
// and the clock decide), and the project's channels. The view is computed
// for every check on every list, so the clock can never leave a cached
// status behind.
//
// Only complete unfiltered lists add to it, and each forgets the checks it
// did not show: it holds at most one rendering of each check that exists
// for each form its project is listed in (about 900 bytes each).
type renderedChecks struct {
	mu       sync.Mutex
	projects map[listForm]*renderedProject
	// counted numbers unfiltered lists and the channels lists saw, in
	// every project: a number is never used twice, even for a project
	// forgotten and seen again.
	counted uint64
}

type renderedProject struct {
	checks map[types.UID]renderedCheck
	// channels are the project's channels as the last list saw them, and
	// channelsSeen their number: a check's "channels" field is the same
	// for two lists that saw the same number.
	channels     string
	channelsSeen uint64
}

type renderedCheck struct {
	of   renderKey
	json []byte // never written once cached
	list uint64 // the last unfiltered list that showed it
}

// listForm is a project's list as one kind of client reads it.
type listForm struct {
	namespace string
	version   int  // of the API
	readOnly  bool // the key's access
}

// renderKey is what a check's JSON is made of besides its form and
// constants of the server (its base URL).
type renderKey struct {
	generation int64
	view       checks.View
	channels   uint64 // the project's channelsSeen; 0 for read-only keys
}

// listPass is one list's use of a project's renderings.
type listPass struct {
	rc       *renderedChecks
	form     listForm
	list     uint64 // 0 for a filtered list, which only reads
	channels uint64 // for renderKey
}

// pass begins a list in form, full when it is unfiltered, with the
// project's channels (nil for read-only keys, which see none).
func (rc *renderedChecks) pass(form listForm, full bool, channels []v1.Channel) listPass {
	p := listPass{rc: rc, form: form}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	proj := rc.project(form)
	if full {
		rc.counted++
		p.list = rc.counted
	}
	if channels != nil {
		if seen := channelsIdentity(channels); seen != proj.channels || proj.channelsSeen == 0 {
			rc.counted++
			proj.channels, proj.channelsSeen = seen, rc.counted
		}
		p.channels = proj.channelsSeen
	}
	return p
}

// project is the renderings of a project in form, made when missing;
// rc.mu is held.
func (rc *renderedChecks) project(form listForm) *renderedProject {
	if rc.projects == nil {
		rc.projects = map[listForm]*renderedProject{}
	}
	proj := rc.projects[form]
	if proj == nil {
		proj = &renderedProject{checks: map[types.UID]renderedCheck{}}
		rc.projects[form] = proj
	}
	return proj
}

// json is the check's JSON for key: the cached one when it was made from
// the same key, otherwise render's, which an unfiltered list keeps.
// render runs without the lock held.
func (p listPass) json(uid types.UID, key renderKey, render func() []byte) []byte {
	rc := p.rc
	rc.mu.Lock()
	if proj := rc.projects[p.form]; proj != nil {
		if c, ok := proj.checks[uid]; ok && c.of == key {
			if p.list > c.list {
				c.list = p.list
				proj.checks[uid] = c
			}
			rc.mu.Unlock()
			return c.json
		}
	}
	rc.mu.Unlock()
	b := render()
	if p.list != 0 {
		rc.mu.Lock()
		rc.project(p.form).checks[uid] = renderedCheck{of: key, json: b, list: p.list}
		rc.mu.Unlock()
	}
	return b
}

// sweep ends a complete unfiltered list: the checks it did not show are
// gone, and so are their renderings (a project without checks, whole).
func (p listPass) sweep() {
	if p.list == 0 {
		return
	}
	rc := p.rc
	rc.mu.Lock()
	defer rc.mu.Unlock()
	proj := rc.projects[p.form]
	if proj == nil {
		return
	}
	for uid, c := range proj.checks {
		if c.list < p.list {
			delete(proj.checks, uid)
		}
	}
	if len(proj.checks) == 0 {
		delete(rc.projects, p.form)
	}
}

// channelsIdentity is a project's channels as a check's "channels" field
// reads them: their names and IDs, in order.
func channelsIdentity(channels []v1.Channel) string {
	var b strings.Builder
	for i := range channels {
		b.WriteString(channels[i].Name)
		b.WriteByte(0)
		b.WriteString(string(channels[i].UID))
		b.WriteByte(0)
	}
	return b.String()
}
