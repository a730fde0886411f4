package access

import (
	"slices"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// Bindings knows which namespaces have a RoleBinding that names a person
// (their user name, one of their groups, or system:authenticated), so that
// a person's board asks Kubernetes only about those: RBAC grants in a
// namespace through that namespace's RoleBindings alone, or in every
// namespace through a ClusterRoleBinding, which one cluster-wide question
// answers. Without it a board across 1,000 projects would ask 1,000
// questions; with it, as many as the person has bindings.
//
// It is fed by an informer of RoleBindings stripped to their subjects
// (Strip), about 150 bytes each. An authorizer other than RBAC (a
// webhook) that grants without a RoleBinding is not seen: run with
// --oidc-projects-from-rolebindings=false there, and every project is
// asked about.
type Bindings struct {
	mu sync.RWMutex
	// byName maps "User:alice" and "Group:ops" to the namespaces whose
	// RoleBindings name them, with how many do.
	byName map[string]map[string]int
	// names are each RoleBinding's entries in byName, for its update and
	// deletion.
	names  map[types.UID][]string
	ns     map[types.UID]string
	synced func() bool
}

// authenticated is the group every signed-in person is in, for RBAC.
const authenticated = "system:authenticated"

// NewBindings returns an empty index; Watch feeds it.
func NewBindings() *Bindings {
	return &Bindings{byName: map[string]map[string]int{}, names: map[types.UID][]string{}, ns: map[types.UID]string{}}
}

// Watch feeds the index from a RoleBinding informer.
func (b *Bindings) Watch(informer cache.SharedIndexInformer) error {
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.set(obj) },
		UpdateFunc: func(_, obj any) { b.set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if rb, ok := obj.(*rbacv1.RoleBinding); ok {
				b.mu.Lock()
				b.drop(rb.UID)
				b.mu.Unlock()
			}
		},
	})
	b.synced = informer.HasSynced
	return err
}

// Strip is the informer's transform: a RoleBinding's namespace, name, UID
// and subjects are all the index reads.
func Strip(obj any) (any, error) {
	rb, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return obj, nil
	}
	out := &rbacv1.RoleBinding{Subjects: make([]rbacv1.Subject, 0, len(rb.Subjects))}
	out.Namespace, out.Name, out.UID, out.ResourceVersion = rb.Namespace, rb.Name, rb.UID, rb.ResourceVersion
	for _, s := range rb.Subjects {
		if s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind {
			out.Subjects = append(out.Subjects, rbacv1.Subject{Kind: s.Kind, Name: s.Name})
		}
	}
	return out, nil
}

func (b *Bindings) set(obj any) {
	rb, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drop(rb.UID)
	var names []string
	for _, s := range rb.Subjects {
		if s.Kind != rbacv1.UserKind && s.Kind != rbacv1.GroupKind {
			continue
		}
		name := s.Kind + ":" + s.Name
		if b.byName[name] == nil {
			b.byName[name] = map[string]int{}
		}
		b.byName[name][rb.Namespace]++
		names = append(names, name)
	}
	b.names[rb.UID], b.ns[rb.UID] = names, rb.Namespace
}

// drop forgets a RoleBinding's entries; under the write lock.
func (b *Bindings) drop(uid types.UID) {
	ns := b.ns[uid]
	for _, name := range b.names[uid] {
		if b.byName[name][ns]--; b.byName[name][ns] <= 0 {
			delete(b.byName[name], ns)
		}
		if len(b.byName[name]) == 0 {
			delete(b.byName, name)
		}
	}
	delete(b.names, uid)
	delete(b.ns, uid)
}

// Namespaces lists, sorted, the namespaces with a RoleBinding that names p
// (by user, by one of their groups, or system:authenticated); ok is false
// until the informer has listed every RoleBinding, and then nothing can be
// said.
func (b *Bindings) Namespaces(p Person) (namespaces []string, ok bool) {
	if b.synced == nil || !b.synced() {
		return nil, false
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	seen := map[string]bool{}
	add := func(name string) {
		for ns := range b.byName[name] {
			if !seen[ns] {
				seen[ns] = true
				namespaces = append(namespaces, ns)
			}
		}
	}
	add(rbacv1.UserKind + ":" + p.Username)
	for _, g := range p.Groups {
		add(rbacv1.GroupKind + ":" + g)
	}
	add(rbacv1.GroupKind + ":" + authenticated)
	slices.Sort(namespaces)
	return namespaces, true
}
