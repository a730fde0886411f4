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
// from the last time: its spec (the object's generation; its UID is what
// finds its rendering, and neither its status nor its labels are shown),
// its view at the list's instant (status, pings, deadlines: what the store
// and the clock decide), and the project's channels. The view is computed for
// every check on every list, so the clock can never leave a cached status
// behind.
//
// What it holds is bounded by what is being listed: a project's renderings
// are those of its last complete unfiltered list, in that list's order,
// and a form not listed whole for formIdle is forgotten at the next list
// of any project (a client gone, a namespace deleted). So it holds at most
// one rendering of each check for each form its project was listed in
// lately, about 900 bytes each.
type renderedChecks struct {
	mu       sync.Mutex
	projects map[listForm]*renderedProject
	// counted numbers the channels lists saw, in every project: a number
	// is never used twice, even for a project forgotten and seen again.
	counted uint64
	// swept is when forms were last looked over for formIdle.
	swept time.Time
}

// formIdle is how long a form's renderings stay without an unfiltered
// list: a client listing every few minutes (a Terraform refresh, a poller)
// keeps them.
const formIdle = 15 * time.Minute

type renderedProject struct {
	// listed are the renderings of the last complete unfiltered list, in
	// its order (oldest check first); never changed once kept. A list
	// reads them in step with its own checks, without a lookup while the
	// two keep step (10,000 lookups in a map by UID were a sixth of a
	// list's time).
	listed *renderedList
	// channels are the project's channels as the last list saw them, and
	// channelsSeen their number: a check's "channels" field is the same
	// for two lists that saw the same number.
	channels     string
	channelsSeen uint64
	began        time.Time // the last unfiltered list began
}

type renderedList struct {
	checks []*renderedCheck
	// at finds a check's place in checks for a list that lost step (a
	// check deleted, a filtered list), made the first time one does.
	once sync.Once
	at   map[types.UID]int
}

func (l *renderedList) place(uid types.UID) (int, bool) {
	l.once.Do(func() {
		l.at = make(map[types.UID]int, len(l.checks))
		for i, c := range l.checks {
			l.at[c.uid] = i
		}
	})
	i, ok := l.at[uid]
	return i, ok
}

// renderedCheck is one check's JSON; never changed once made.
type renderedCheck struct {
	uid  types.UID
	of   renderKey
	json []byte
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

// listPass is one list's use of a project's renderings; one goroutine's.
type listPass struct {
	rc       *renderedChecks
	form     listForm
	full     bool   // unfiltered: it keeps what it shows
	channels uint64 // for renderKey
	prev     *renderedList
	next     int              // prev's check expected next
	shown    []*renderedCheck // a full list's, in order
}

// pass begins a list in form at now, full when it is unfiltered, with the
// project's channels (nil for read-only keys, which see none).
func (rc *renderedChecks) pass(form listForm, full bool, channels []v1.Channel, now time.Time) *listPass {
	p := &listPass{rc: rc, form: form, full: full}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.forgetIdle(now)
	proj := rc.projects[form]
	if proj != nil && proj.listed != nil {
		p.prev = proj.listed
		if full {
			p.shown = make([]*renderedCheck, 0, len(proj.listed.checks))
		}
	}
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
		proj = &renderedProject{}
		if rc.projects == nil {
			rc.projects = map[listForm]*renderedProject{}
		}
		rc.projects[form] = proj
	}
	proj.began = now
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
		if now.Sub(proj.began) >= formIdle {
			delete(rc.projects, form)
		}
	}
}

// json is the check's JSON for key: the kept one when it was made from the
// same key, otherwise render's.
func (p *listPass) json(uid types.UID, key renderKey, render func() []byte) []byte {
	c := p.kept(uid)
	if c == nil || c.of != key {
		c = &renderedCheck{uid: uid, of: key, json: render()}
	}
	if p.full {
		p.shown = append(p.shown, c)
	}
	return c.json
}

// kept is the check's rendering from the last complete list, if any.
func (p *listPass) kept(uid types.UID) *renderedCheck {
	if p.prev == nil {
		return nil
	}
	checks := p.prev.checks
	if p.next < len(checks) && checks[p.next].uid == uid {
		p.next++
		return checks[p.next-1]
	}
	i, ok := p.prev.place(uid)
	if !ok {
		return nil // a check new since
	}
	p.next = i + 1 // in step again from here
	return checks[i]
}

// finish ends a complete list: an unfiltered one's renderings are now the
// project's (the checks it did not show are gone, a project without
// checks, whole).
func (p *listPass) finish() {
	if !p.full {
		return
	}
	rc := p.rc
	rc.mu.Lock()
	defer rc.mu.Unlock()
	proj := rc.projects[p.form]
	switch {
	case proj == nil: // forgotten meanwhile
	case len(p.shown) == 0:
		delete(rc.projects, p.form)
	default:
		proj.listed = &renderedList{checks: p.shown}
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
