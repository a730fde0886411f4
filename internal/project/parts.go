package project

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// part is what one namespace's project Secrets hold, within its limits:
// the registry's indexes are the sum of the parts, and an event in a
// namespace builds that namespace's part again, not the others'.
type part struct {
	// info holds the values the Secrets set, owned or not.
	info            Info
	pingID, badgeID string     // key ids of info.PingKey and info.BadgeKey
	keys            []keyEntry // the API keys that count
	offers          []offer    // every key the Secrets hold, with its Secret
	ids             []string   // the ids of offers, sorted, once each
	// limited tells, by Secret name, what of it the limits cut.
	limited map[string]limitNote
}

// limitNote is what the limits cut of one Secret.
type limitNote struct {
	secret  *corev1.Secret
	message string
}

// claim is a Secret holding a key.
type claim struct {
	what   string // "ping key", "badge key", "API key <label>"
	secret *corev1.Secret
}

type offer struct {
	id string
	claim
}

// maxValueLen bounds the ping key, badge key and signing secret a Secret
// sets (22, 36 and 40 characters when generated): a longer value sets
// nothing, so that a megabyte of one costs no copy on every build.
const maxValueLen = 1024

// buildPart reads a namespace's project Secrets (a snapshot: it reads no
// registry state, and runs without the registry's lock) into a part (nil
// when there are none), reading no more than its limits allow: the oldest
// Secrets count, and in them, in that order, the first API key lines;
// read-write keys before read-only ones. When a namespace has several
// project Secrets, the first by name that sets a value wins for ping, badge
// and signing keys.
func buildPart(ns string, secrets []*corev1.Secret, limits *Limits) *part {
	if len(secrets) == 0 {
		return nil
	}
	secrets = slices.Clone(secrets)
	sort.Slice(secrets, func(i, j int) bool { return olderSecret(secrets[i], secrets[j]) })
	p := &part{info: Info{Namespace: ns}, limited: map[string]limitNote{}}
	if limit := limits.SecretLimit(ns); len(secrets) > limit {
		for _, s := range secrets[limit:] {
			p.limited[s.Name] = limitNote{secret: s, message: fmt.Sprintf("namespace %s has more than %d project Secrets, the limit: this one, among the newest, "+
				"is ignored and its keys open nothing. A cluster administrator can raise the limit (manager flag --project-secret-limit, "+
				"or %s.%s in the limits ConfigMap)", ns, limit, ns, LimitsKeySecretLimit)}
		}
		secrets = secrets[:limit]
	}

	limit := limits.KeyLimit(ns)
	budget := newLineBudget(limit)
	for _, s := range secrets {
		var cut []string
		var cause stopCause
		for _, f := range []struct {
			field  string
			access Access
		}{{DataReadWriteKeys, ReadWrite}, {DataReadOnlyKeys, ReadOnly}} {
			keys, stoppedAt, why := parseKeysUpTo(s.Data[f.field], budget)
			for _, k := range keys {
				e := keyEntry{namespace: ns, access: f.access, key: k, id: k.identity()}
				p.keys = append(p.keys, e)
				p.offers = append(p.offers, offer{id: e.id, claim: claim{what: "API key " + k.Label, secret: s}})
			}
			switch {
			case stoppedAt == 1:
				cut = append(cut, "all of "+f.field)
			case stoppedAt > 1:
				cut = append(cut, fmt.Sprintf("%s from line %d on", f.field, stoppedAt))
			}
			cause = max(cause, why)
		}
		switch {
		case len(cut) == 0:
		case cause == otherLimit:
			p.limited[s.Name] = limitNote{secret: s, message: fmt.Sprintf("the project Secrets of namespace %s hold more than %d lines that are not API keys "+
				"(comments, blank or malformed lines), the limit (the API key limit plus %d): in this Secret, %s are ignored and open nothing. "+
				"Remove those lines, or a cluster administrator can raise the limit (manager flag --api-key-limit, or %s.%s in the limits ConfigMap)",
				ns, limit+otherLineAllowance, otherLineAllowance, strings.Join(cut, " and "), ns, LimitsKeyKeyLimit)}
		default:
			p.limited[s.Name] = limitNote{secret: s, message: fmt.Sprintf("the project Secrets of namespace %s hold more than %d API keys, the limit: "+
				"in this Secret, %s are ignored and open nothing. A cluster administrator can raise the limit (manager flag --api-key-limit, "+
				"or %s.%s in the limits ConfigMap)", ns, limit, strings.Join(cut, " and "), ns, LimitsKeyKeyLimit)}
		}
	}

	byName := slices.Clone(secrets)
	sort.Slice(byName, func(i, j int) bool { return byName[i].Name < byName[j].Name })
	var pingFrom, badgeFrom *corev1.Secret
	for _, s := range byName {
		if p.info.PingKey == "" {
			p.info.PingKey, pingFrom = value(s, DataPingKey), s
		}
		if p.info.BadgeKey == "" {
			p.info.BadgeKey, badgeFrom = value(s, DataBadgeKey), s
		}
		if p.info.SigningSecret == "" {
			p.info.SigningSecret = value(s, DataSigningSecret)
		}
	}
	if p.info.PingKey != "" {
		p.pingID = keyID("ping", p.info.PingKey)
		p.offers = append(p.offers, offer{id: p.pingID, claim: claim{what: "ping key", secret: pingFrom}})
	}
	if p.info.BadgeKey != "" {
		p.badgeID = keyID("badge", p.info.BadgeKey)
		p.offers = append(p.offers, offer{id: p.badgeID, claim: claim{what: "badge key", secret: badgeFrom}})
	}
	for _, o := range p.offers {
		p.ids = append(p.ids, o.id)
	}
	sort.Strings(p.ids)
	p.ids = slices.Compact(p.ids)
	return p
}

// value is one of a Secret's single values, "" when it sets none or one
// longer than maxValueLen. Hand-written Secrets often end values with a
// newline; keys never do.
func value(s *corev1.Secret, field string) string {
	v := s.Data[field]
	if len(v) > maxValueLen {
		return ""
	}
	return string(bytes.TrimSpace(v))
}

// apply replaces a namespace's part in the indexes (nil removes it), and
// tells what changed: conflicts, limits, and the keys to record.
func (r *Registry) apply(ns string, p *part) {
	old := r.parts[ns]
	if p == nil {
		delete(r.parts, ns)
	} else {
		r.parts[ns] = p
	}

	// API keys, by label: the labels either part holds lose this
	// namespace's entries and get the new part's.
	fresh := map[string][]keyEntry{}
	if old != nil {
		for _, e := range old.keys {
			fresh[e.key.Label] = nil
		}
	}
	if p != nil {
		for _, e := range p.keys {
			fresh[e.key.Label] = append(fresh[e.key.Label], e)
		}
	}
	for lbl, entries := range fresh {
		kept := slices.DeleteFunc(r.byLabel[lbl], func(e keyEntry) bool { return e.namespace == ns })
		if kept = append(kept, entries...); len(kept) == 0 {
			delete(r.byLabel, lbl)
		} else {
			r.byLabel[lbl] = kept
		}
	}

	// Ping and badge keys.
	if old != nil {
		removeName(r.byPingKey, old.info.PingKey, ns)
		removeName(r.byBadgeKey, old.info.BadgeKey, ns)
	}
	if p != nil {
		if p.info.PingKey != "" {
			r.byPingKey[p.info.PingKey] = append(r.byPingKey[p.info.PingKey], ns)
		}
		if p.info.BadgeKey != "" {
			r.byBadgeKey[p.info.BadgeKey] = append(r.byBadgeKey[p.info.BadgeKey], ns)
		}
	}

	// Who holds each key.
	affected := map[string]bool{}
	if old != nil {
		for _, id := range old.ids {
			affected[id] = true
			offers := slices.DeleteFunc(r.offers[id], func(c claim) bool { return c.secret.Namespace == ns })
			if len(offers) == 0 {
				delete(r.offers, id)
			} else {
				r.offers[id] = offers
			}
		}
	}
	if p != nil {
		for _, o := range p.offers {
			affected[o.id] = true
			r.offers[o.id] = append(r.offers[o.id], o.claim)
		}
	}
	r.tellConflicts(affected)
	r.tellLimits(old, p)

	var ids []string
	if p != nil {
		ids = p.ids
	}
	if !slices.Equal(ids, r.synced[ns]) {
		r.toSync[ns] = true
	}
}

func removeName(index map[string][]string, key, ns string) {
	if key == "" {
		return
	}
	if left := slices.DeleteFunc(index[key], func(n string) bool { return n == ns }); len(left) == 0 {
		delete(index, key)
	} else {
		index[key] = left
	}
}

// owner is the namespace that owns a key: the one the ping store records
// as its holder (RecordClaims: the first, across re-creates of its
// Secret), else the one whose Secret holding it is oldest ("" when none).
//
// Across namespaces every key is unique: a project Secret is the tenant's
// to write, so a tenant could copy another project's ping key (and receive
// its pings), its badge key, or a stored API key line (and have the other
// project's client write into theirs). The other project's copy opens
// nothing, and OnConflict hears of it.
func (r *Registry) owner(id string) string {
	if ns, ok := r.claimed[id]; ok {
		return ns
	}
	var best *corev1.Secret
	for _, c := range r.offers[id] {
		if best == nil || olderSecret(c.secret, best) {
			best = c.secret
		}
	}
	if best == nil {
		return ""
	}
	return best.Namespace
}

// tellConflicts works out again the conflicts over the keys ids, and tells
// OnConflict of those it has not heard of.
func (r *Registry) tellConflicts(ids map[string]bool) {
	for id := range ids {
		owner := r.owner(id)
		var now []Conflict
		for _, c := range r.offers[id] {
			if c.secret.Namespace == owner {
				continue
			}
			conflict := Conflict{Secret: types.NamespacedName{Namespace: c.secret.Namespace, Name: c.secret.Name}, What: c.what}
			now = append(now, conflict)
			if r.OnConflict != nil && !slices.Contains(r.conflicts[id], conflict) {
				r.OnConflict(c.secret, c.what)
			}
		}
		if len(now) == 0 {
			delete(r.conflicts, id)
		} else {
			r.conflicts[id] = now
		}
	}
}

// tellLimits tells OnLimit of each Secret the limits cut that they did not
// cut, or cut otherwise, in the namespace's previous part.
func (r *Registry) tellLimits(old, p *part) {
	if r.OnLimit == nil || p == nil {
		return
	}
	names := make([]string, 0, len(p.limited))
	for name := range p.limited {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		note := p.limited[name]
		if old != nil && old.limited[name].message == note.message {
			continue
		}
		// The Secret of the snapshot the part was built from: the
		// registry's own may have changed or gone since.
		r.OnLimit(note.secret, note.message)
	}
}

// olderSecret orders Secrets by creation, then namespace and name, so that
// every replica picks the same owner, and the same Secrets within limits.
func olderSecret(a, b *corev1.Secret) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
