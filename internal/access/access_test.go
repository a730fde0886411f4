package access_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vigil-operator/vigil/internal/access"
	"github.com/vigil-operator/vigil/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// counted counts the reviews that reach the API server.
type counted struct {
	access.Reviewer
	n atomic.Int32
}

func (c *counted) Create(ctx context.Context, r *authorizationv1.SubjectAccessReview, o metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	c.n.Add(1)
	return c.Reviewer.Create(ctx, r, o)
}

// The cluster's RBAC decides, through the ClusterRoles docs/dashboard.md
// gives (a viewer lists checks, an operator updates them too), bound to a
// user in one namespace and to a group in another; the manager asks as its
// own ServiceAccount, under the RBAC it ships with.
func TestMayFollowsRBAC(t *testing.T) {
	ctx := t.Context()
	cluster, err := testenv.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	admin := kubernetes.NewForConfigOrDie(cluster.Config)
	managerConfig, forbidden, err := testenv.AsManager(ctx, cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	asManager := kubernetes.NewForConfigOrDie(managerConfig)

	for _, ns := range []string{"team-a", "team-b", "team-c"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	roles := map[string][]string{"vigil-viewer": {"get", "list", "watch"}, "vigil-operator": {"get", "list", "watch", "update", "patch"}}
	for name, verbs := range roles {
		_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"monitoring.vigil.dev"}, Resources: []string{"checks"}, Verbs: verbs}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	bind := func(ns, role string, subject rbacv1.Subject) {
		t.Helper()
		_, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	bind("team-a", "vigil-viewer", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice@example.com"})
	bind("team-b", "vigil-operator", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team-b-ops"})

	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	reviews := &counted{Reviewer: asManager.AuthorizationV1().SubjectAccessReviews()}
	a := &access.Authorizer{Reviews: reviews, Clock: clk}
	alice := access.Person{Username: "alice@example.com", Groups: []string{"team-b-ops", "everyone"}}
	bob := access.Person{Username: "bob@example.com", Groups: []string{"everyone"}}

	for _, tc := range []struct {
		who       access.Person
		namespace string
		verb      access.Verb
		want      bool
	}{
		{alice, "team-a", access.View, true},
		{alice, "team-a", access.Operate, false},
		{alice, "team-b", access.View, true},
		{alice, "team-b", access.Operate, true},
		{alice, "team-c", access.View, false},
		{alice, "", access.View, false}, // no ClusterRoleBinding
		{bob, "team-a", access.View, false},
		{bob, "team-b", access.View, false},
	} {
		got, err := a.May(ctx, tc.who, tc.namespace, tc.verb)
		if err != nil || got != tc.want {
			t.Errorf("%s may %s checks in %q: %v, %v; want %v", tc.who.Username, tc.verb, tc.namespace, got, err, tc.want)
		}
	}
	if n := reviews.n.Load(); n != 8 {
		t.Errorf("%d reviews for 8 questions", n)
	}

	// Asked again (the groups in another order): the answers are kept.
	reordered := access.Person{Username: alice.Username, Groups: []string{"everyone", "team-b-ops"}}
	if ok, err := a.May(ctx, reordered, "team-b", access.Operate); !ok || err != nil {
		t.Errorf("again: %v, %v", ok, err)
	}
	if n := reviews.n.Load(); n != 8 {
		t.Errorf("%d reviews after asking again, want the 8 kept", n)
	}

	// The binding goes: a yes is felt gone once it is older than Allowed.
	if err := admin.RbacV1().RoleBindings("team-b").Delete(ctx, "vigil-operator", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(access.DefaultAllowed - time.Second))
	if ok, _ := a.May(ctx, alice, "team-b", access.Operate); !ok {
		t.Error("the yes was dropped before Allowed passed")
	}
	clk.SetTime(clk.Now().Add(2 * time.Second))
	deadline := time.Now().Add(30 * time.Second)
	for {
		// RBAC's own cache in the API server follows the delete within a
		// moment; the Authorizer asks again each time its no is not yet kept.
		ok, err := a.May(ctx, alice, "team-b", access.Operate)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice may still operate team-b after her group's binding was deleted")
		}
		clk.SetTime(clk.Now().Add(access.DefaultAllowed))
		time.Sleep(100 * time.Millisecond)
	}
	if reqs := forbidden.Requests(); len(reqs) > 0 {
		t.Errorf("the manager's RBAC forbade: %v", reqs)
	}
}

// Answers are bounded: past MaxAnswers, the expired ones go first.
func TestAnswersBounded(t *testing.T) {
	ctx := t.Context()
	cluster, err := testenv.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	reviews := &counted{Reviewer: kubernetes.NewForConfigOrDie(cluster.Config).AuthorizationV1().SubjectAccessReviews()}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	a := &access.Authorizer{Reviews: reviews, Clock: clk, MaxAnswers: 3}
	p := access.Person{Username: "carol"}
	for _, ns := range []string{"a", "b", "c", "d"} {
		if _, err := a.May(ctx, p, ns, access.View); err != nil {
			t.Fatal(err)
		}
	}
	// "d" was kept, after everything else was dropped to make room.
	if _, err := a.May(ctx, p, "d", access.View); err != nil {
		t.Fatal(err)
	}
	if n := reviews.n.Load(); n != 4 {
		t.Errorf("%d reviews, want 4 (d kept)", n)
	}
	if _, err := a.May(ctx, p, "a", access.View); err != nil {
		t.Fatal(err)
	}
	if n := reviews.n.Load(); n != 5 {
		t.Errorf("%d reviews, want 5 (a dropped to make room)", n)
	}
}

// The index of RoleBindings names, for a person, the namespaces where a
// RoleBinding names them, one of their groups or every authenticated user,
// as RoleBindings come, change and go; the manager reads them under the
// role it ships for sign-in.
func TestBindingsFollowRoleBindings(t *testing.T) {
	ctx := t.Context()
	cluster, err := testenv.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	admin := kubernetes.NewForConfigOrDie(cluster.Config)
	managerConfig, forbidden, err := testenv.AsManager(ctx, cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	// As docs/dashboard.md says for an install from config/.
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "vigil-dashboard-signin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "vigil-dashboard-signin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: testenv.ManagerServiceAccount, Namespace: testenv.ManagerNamespace}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"ns-user", "ns-group", "ns-all", "ns-none"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(ns, name string, subjects ...rbacv1.Subject) {
		t.Helper()
		_, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: subjects}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	user := func(n string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: n}
	}
	group := func(n string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: n}
	}
	bind("ns-user", "alice", user("alice@example.com"), user("carol@example.com"))
	bind("ns-group", "ops", group("team-ops"))
	bind("ns-none", "sa", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "deploy", Namespace: "ns-none"})

	factory := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(managerConfig), 0, informers.WithTransform(access.Strip))
	b := access.NewBindings()
	informer := factory.Rbac().V1().RoleBindings().Informer()
	if err := b.Watch(informer); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Namespaces(access.Person{Username: "alice@example.com"}); ok {
		t.Error("the index answered before it listed the RoleBindings")
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })

	alice := access.Person{Username: "alice@example.com", Groups: []string{"team-ops"}}
	bob := access.Person{Username: "bob@example.com", Groups: []string{"team-dev"}}
	eventually := func(p access.Person, want ...string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got, ok := b.Namespaces(p)
			if ok && slices.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v (synced %v), want %v", p.Username, got, ok, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	eventually(alice, "ns-group", "ns-user")
	eventually(bob)
	eventually(access.Person{Username: "deploy"}) // a ServiceAccount of that name is not them

	// Every authenticated user, then a binding changed, then one deleted.
	bind("ns-all", "everyone", group("system:authenticated"))
	eventually(bob, "ns-all")
	eventually(alice, "ns-all", "ns-group", "ns-user")
	rb, err := admin.RbacV1().RoleBindings("ns-user").Get(ctx, "alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rb.Subjects = []rbacv1.Subject{user("carol@example.com")}
	if _, err := admin.RbacV1().RoleBindings("ns-user").Update(ctx, rb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(alice, "ns-all", "ns-group")
	eventually(access.Person{Username: "carol@example.com"}, "ns-all", "ns-user")
	if err := admin.RbacV1().RoleBindings("ns-group").Delete(ctx, "ops", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(alice, "ns-all")

	// What the index keeps of a RoleBinding: its subjects, nothing else.
	stripped, _ := access.Strip(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "x",
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 4096)}},
		RoleRef:  rbacv1.RoleRef{Name: "admin"},
		Subjects: []rbacv1.Subject{user("u"), {Kind: rbacv1.ServiceAccountKind, Name: "s"}}})
	if s := stripped.(*rbacv1.RoleBinding); len(s.Annotations) != 0 || s.RoleRef.Name != "" || len(s.Subjects) != 1 || s.Namespace != "n" {
		t.Errorf("stripped to %+v", s)
	}
	if reqs := forbidden.Requests(); len(reqs) > 0 {
		t.Errorf("the manager's RBAC forbade: %v", reqs)
	}
}
