package namespaced

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/controller"
)

var _ = Describe("A manager limited to listed namespaces", func() {
	It("serves checks, pings and notifications in a listed namespace", func() {
		var mu sync.Mutex
		var got []string
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, r.URL.Path+" "+r.Header.Get("X-Token"))
		}))
		DeferCleanup(receiver.Close)
		requests := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), got...)
		}

		p := harness.CreateProject(teamA)
		Eventually(func() (bool, error) { return harness.Accepts(p.ReadWrite) }).Should(BeTrue())

		// A Channel whose header comes from a Secret, which the manager
		// reads uncached with its Role.
		Expect(harness.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "hook-token"},
			StringData: map[string]string{"token": "t0ken"}})).To(Succeed())
		ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "ops"}, Spec: v1.ChannelSpec{
			Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{
				URL:              receiver.URL + "/down/$NAME",
				HeaderSecretRefs: map[string]v1.SecretKeyRef{"X-Token": {Name: "hook-token", Key: "token"}},
			}}}}
		Expect(harness.Client.Create(ctx, ch)).To(Succeed())
		// "*" is every channel the project shows when the check is made:
		// wait until it shows this one (the manager's cache lags the
		// API server by seconds under load).
		Eventually(func() string { return harness.Call(http.MethodGet, "/api/v3/channels/", p.ReadWrite, "").Text() }).
			Should(ContainSubstring(string(ch.UID)))

		// A check created through the API, on every channel, fails.
		r := harness.Call(http.MethodPost, "/api/v3/checks/", p.ReadWrite, `{"name": "backup", "timeout": 3600, "grace": 60, "channels": "*"}`)
		Expect(r.Status).To(Equal(http.StatusCreated), r.Text())
		var created struct{ UUID string }
		Expect(json.Unmarshal(r.Body, &created)).To(Succeed())
		Eventually(func() int { return harness.Call(http.MethodGet, "/ping/"+created.UUID+"/fail", "", "").Status }).Should(Equal(http.StatusOK))

		Eventually(requests).Should(ContainElement("/down/backup t0ken"))
		Eventually(func(g Gomega) {
			cur := &v1.Channel{}
			g.Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(ch), cur)).To(Succeed())
			g.Expect(cur.Status.LastDelivery).NotTo(BeNil())
		}).Should(Succeed())
		var check *v1.Check
		Eventually(func(g Gomega) v1.CheckState {
			var list v1.CheckList
			g.Expect(harness.Client.List(ctx, &list, client.InNamespace(teamA))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			check = &list.Items[0]
			return check.Status.State
		}).Should(Equal(v1.CheckStateDown))
		// The flip's Event, in the check's namespace.
		Eventually(func(g Gomega) []eventsv1.Event {
			var events eventsv1.EventList
			g.Expect(harness.Client.List(ctx, &events, client.InNamespace(teamA))).To(Succeed())
			return events.Items
		}).Should(ContainElement(HaveField("Regarding.Name", check.Name)))

		// A slug ping creates its check, through the API server.
		Expect(harness.Call(http.MethodGet, "/ping/"+p.PingKey+"/nightly?create=1", "", "").Status).To(Equal(http.StatusCreated))
		Eventually(func(g Gomega) []v1.Check {
			var list v1.CheckList
			g.Expect(harness.Client.List(ctx, &list, client.InNamespace(teamA))).To(Succeed())
			return list.Items
		}).Should(ContainElement(HaveField("Spec.Slug", "nightly")))
	})

	It("monitors a CronJob in a listed namespace and lists its failed pods", func() {
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "report", Annotations: map[string]string{
				controller.AnnotationCheck: "true", controller.AnnotationLogs: "true"}},
			Spec: batchv1.CronJobSpec{Schedule: "0 3 29 2 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "job", Image: "busybox"}}}}}}},
		}
		Expect(harness.Client.Create(ctx, cj)).To(Succeed())
		check := &v1.Check{}
		Eventually(func(g Gomega) string {
			g.Expect(harness.Client.Get(ctx, client.ObjectKey{Namespace: teamB, Name: controller.CheckNameForCronJob(cj.Name)}, check)).To(Succeed())
			return check.Status.UUID
		}).ShouldNot(BeEmpty())
		Expect(metav1.IsControlledBy(check, cj)).To(BeTrue())

		// A Job of the CronJob fails, with a failed pod (envtest runs
		// neither the Job controller nor a kubelet: the test writes their
		// statuses).
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "report-1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true)}}},
			Spec: cj.Spec.JobTemplate.Spec}
		Expect(harness.Client.Create(ctx, job)).To(Succeed())
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "report-1-x7k2p",
			Labels:          map[string]string{batchv1.JobNameLabel: job.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}},
			Spec: job.Spec.Template.Spec}
		Expect(harness.Client.Create(ctx, pod)).To(Succeed())
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", Image: "busybox",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error"}}}}
		Expect(harness.Client.Status().Update(ctx, pod)).To(Succeed())
		at := metav1.NewTime(time.Now().Add(time.Second).Truncate(time.Second))
		job.Status.StartTime = &at
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: at},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: at},
		}
		Expect(harness.Client.Status().Update(ctx, job)).To(Succeed())

		// The fail ping names the pod, listed with the Role, and its log
		// was read (pods/log, allowed by the Role).
		Eventually(func(g Gomega) {
			cur := &v1.Check{}
			g.Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(check), cur)).To(Succeed())
			g.Expect(cur.Status.State).To(Equal(v1.CheckStateDown))
			g.Expect(cur.Status.NPings).To(BeEquivalentTo(2)) // start, fail
		}).Should(Succeed())
		p := harness.CreateProject(teamB)
		Eventually(func() (bool, error) { return harness.Accepts(p.ReadWrite) }).Should(BeTrue())
		r := harness.Call(http.MethodGet, fmt.Sprintf("/api/v3/checks/%s/pings/2/body", check.Status.UUID), p.ReadWrite, "")
		Expect(r.Status).To(Equal(http.StatusOK), r.Text())
		// (envtest's API server answers an empty log for a pod on no node.)
		Expect(r.Text()).To(ContainSubstring("Pod report-1-x7k2p, container job exited with code 3 (Error).\n\nThe log of container job in pod report-1-x7k2p is empty."))
	})

	It("sees no project, check or Secret outside the list, and may not", func() {
		Expect(harness.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: outside}})).To(Succeed())
		p := harness.CreateProject(outside)
		timeout := int64(3600)
		hidden := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: outside, Name: "hidden"},
			Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60}}
		Expect(harness.Client.Create(ctx, hidden)).To(Succeed())
		// A project beside it, in a listed namespace, is served: by the
		// time it is, the manager has had every chance to see the other.
		listed := harness.CreateProject(teamA)
		Eventually(func() (bool, error) { return harness.Accepts(listed.ReadOnly) }).Should(BeTrue())
		Eventually(func() int { return harness.Call(http.MethodGet, "/api/v3/checks/", listed.ReadWrite, "").Status }).Should(Equal(http.StatusOK))

		Expect(harness.Accepts(p.ReadWrite)).To(BeFalse(), "the API key of an unlisted namespace opens nothing")
		Expect(harness.Call(http.MethodGet, "/ping/"+string(hidden.UID), "", "").Status).To(Equal(http.StatusNotFound))
		Expect(harness.Call(http.MethodGet, "/ping/"+p.PingKey+"/hidden", "", "").Status).To(Equal(http.StatusNotFound))
		Expect(harness.Call(http.MethodGet, "/ping/"+p.PingKey+"/new-one?create=1", "", "").Status).To(Equal(http.StatusNotFound))
		cur := &v1.Check{}
		Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(hidden), cur)).To(Succeed())
		Expect(cur.Status.UUID).To(BeEmpty(), "no controller reconciled a check outside the list")

		// And RBAC itself refuses the manager's identity there, and
		// everything cluster-wide. (These refusals are the test's own, so
		// its client leaves the manager's record of refusals alone.)
		cfg := rest.CopyConfig(harness.ManagerConfig)
		cfg.WrapTransport = nil
		asManager, err := client.New(cfg, client.Options{Scheme: harness.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		for _, read := range []func() error{
			func() error {
				return asManager.Get(ctx, client.ObjectKey{Namespace: outside, Name: "vigil-project"}, &corev1.Secret{})
			},
			func() error { return asManager.Get(ctx, client.ObjectKeyFromObject(hidden), &v1.Check{}) },
			func() error { return asManager.List(ctx, &corev1.SecretList{}) },
			func() error { return asManager.List(ctx, &v1.CheckList{}) },
			func() error { return asManager.List(ctx, &corev1.PodList{}, client.InNamespace(outside)) },
		} {
			Expect(apierrors.IsForbidden(read())).To(BeTrue())
		}
		Expect(asManager.List(ctx, &v1.CheckList{}, client.InNamespace(teamA))).To(Succeed())
	})
})
