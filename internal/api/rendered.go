package api

import (
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
)

// renderedChecks keeps the JSON each check was last listed as, by project
// and form (API version, key's access), so that a list of thousands of
// checks is mostly copied rather than rendered again: between two lists
// few checks change. Rendering was most of a long list's cost (about 4 µs a
// check, two cores).
//
// A check is rendered again when anything its JSON is made of differs
// from the last time: its spec (the object's generation; its UID is the
// map's key, and neither its status nor its labels are shown), its view at
// the list's instant (status, pings, deadlines: what the store and the
// clock decide), and the project's channels. The view is computed for
// every check on every list, so the clock can never leave a cached status
// behind.
//
// What it holds is bounded by what is being listed: only complete
// unfiltered lists add to it, each forgets the checks it did not show
// (deleted ones), and a form not listed whole for formIdle is forgotten
// at the next list of any project (a client gone, a namespace deleted).
// So it holds at most one rendering of each check for each form its
// project was listed in lately, about 900 bytes each.
type renderedChecks struct {
	mu       sync.Mutex
	projects map[listForm]*renderedProject
	// counted numbers unfiltered lists and the channels lists saw, in
	// every project: a number is never used twice, even for a project
	// forgotten and seen again.
	counted uint64
	// swept is when forms were last looked over for formIdle.
	swept time.Time
}

// formIdle is how long a form's renderings stay without an unfiltered
// list: a client listing every few minutes (a Terraform refresh, a poller)
// keeps them.
const formIdle = 15 * time.Minute

type renderedProject struct {
	checks map[types.UID]*renderedCheck
	// channels are the project's channels as the last list saw them, and
	// channelsSeen their number: a check's "channels" field is the same
	// for two lists that saw the same number.
	channels     string
	channelsSeen uint64
	listed       time.Time // the last unfiltered list began
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

// pass begins a list in form at now, full when it is unfiltered, with the
// project's channels (nil for read-only keys, which see none).
func (rc *renderedChecks) pass(form listForm, full bool, channels []v1.Channel, now time.Time) listPass {
	p := listPass{rc: rc, form: form}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.forgetIdle(now)
	proj := rc.projects[form]
	if !full {
		// A filtered list creates nothing, not even a number for channels
		// it is the first to see: those match no rendering held.
		switch {
		case channels == nil:
		case proj != nil && proj.channelsSeen != 0 && channelsIdentity(channels) == proj.channels:
			p.channels = proj.channelsSeen
		default:
			p.channels = ^uint64(0)
		}
		return p
	}
	if proj == nil {
		proj = &renderedProject{checks: map[types.UID]*renderedCheck{}}
		if rc.projects == nil {
			rc.projects = map[listForm]*renderedProject{}
		}
		rc.projects[form] = proj
	}
	proj.listed = now
	rc.counted++
	p.list = rc.counted
	if channels != nil {
		if seen := channelsIdentity(channels); seen != proj.channels || proj.channelsSeen == 0 {
			rc.counted++
			proj.channels, proj.channelsSeen = seen, rc.counted
		}
		p.channels = proj.channelsSeen
	}
	return p
}

// forgetIdle forgets the forms not listed whole for formIdle, looking at
// most once a minute; rc.mu is held.
func (rc *renderedChecks) forgetIdle(now time.Time) {
	if now.Sub(rc.swept) < time.Minute {
		return
	}
	rc.swept = now
	for form, proj := range rc.projects {
		if now.Sub(proj.listed) >= formIdle {
			delete(rc.projects, form)
		}
	}
}

// json is the check's JSON for key: the cached one when it was made from
// the same key, otherwise render's, which an unfiltered list keeps.
// render runs without the lock held.
func (p listPass) json(uid types.UID, key renderKey, render func() []byte) []byte {
	rc := p.rc
	rc.mu.Lock()
	if proj := rc.projects[p.form]; proj != nil {
		if c := proj.checks[uid]; c != nil && c.of == key {
			c.list = max(c.list, p.list)
			rc.mu.Unlock()
			return c.json
		}
	}
	rc.mu.Unlock()
	b := render()
	if p.list != 0 {
		rc.mu.Lock()
		if proj := rc.projects[p.form]; proj != nil {
			proj.checks[uid] = &renderedCheck{of: key, json: b, list: p.list}
		}
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
