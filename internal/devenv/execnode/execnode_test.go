package execnode_test

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vigil-operator/vigil/internal/devenv/execnode"
)

// boundPod is a pod already bound to the exec node, as the scheduler would
// leave it (envtest runs no scheduler).
func boundPod(name string, init []corev1.Container, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "demo"}},
		Spec: corev1.PodSpec{
			NodeName: "exec-test", RestartPolicy: corev1.RestartPolicyNever,
			Volumes:        []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: init, Containers: containers,
		},
	}
}

func podDir(p *corev1.Pod) string {
	return filepath.Join(dir, p.Namespace+"_"+p.Name+"_"+string(p.UID))
}

func finished(name string) func(Gomega) *corev1.Pod {
	return func(g Gomega) *corev1.Pod {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.Phase).To(Or(Equal(corev1.PodSucceeded), Equal(corev1.PodFailed)))
		return p
	}
}

// ns is the namespace of the test pods.
const ns = "jobs"

var _ = Describe("the exec node", Ordered, func() {
	mount := []corev1.VolumeMount{{Name: "shared", MountPath: "/opt/shared"}}

	BeforeAll(func() {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ping"},
			Data: map[string][]byte{"PING_URL": []byte("http://vigil.test/ping/abc")}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("registers a Ready node that only pods that ask for it are scheduled to", func() {
		Eventually(func(g Gomega) {
			n, err := cs.CoreV1().Nodes().Get(ctx, "exec-test", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n.Labels).To(HaveKeyWithValue(execnode.LabelKey, "true"))
			g.Expect(n.Spec.Taints).To(ContainElement(HaveField("Key", execnode.TaintKey)))
			g.Expect(n.Status.Conditions).To(ContainElement(And(
				HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
		}).Should(Succeed())
	})

	It("runs init containers, then containers, with env, volumes and $(VAR) expansion, and reports success", func() {
		p := boundPod("ok",
			[]corev1.Container{{Name: "install", Image: "vigil:dev", Command: []string{"/vigil", "install", "/opt/shared/tool"}, VolumeMounts: mount}},
			corev1.Container{Name: "main", Image: "busybox", VolumeMounts: mount,
				Env: []corev1.EnvVar{
					{Name: "PING_URL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "ping"}, Key: "PING_URL"}}},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "WHERE", Value: "$(PING_URL)/start"},
				},
				Command: []string{"sh", "-c", `test -x /opt/shared/tool && echo "$POD $WHERE $1"`, "sh", "$(PING_URL)"}})
		p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		Eventually(finished("ok")).WithTimeout(30 * time.Second).Should(Not(BeNil()))
		got, err := cs.CoreV1().Pods(ns).Get(ctx, "ok", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Status.Phase).To(Equal(corev1.PodSucceeded), "message: %s", got.Status.Message)
		Expect(got.Status.InitContainerStatuses).To(ConsistOf(HaveField("State.Terminated.ExitCode", int32(0))))
		Expect(got.Status.ContainerStatuses).To(ConsistOf(HaveField("State.Terminated.Reason", "Completed")))
		Expect(got.Status.StartTime).NotTo(BeNil())

		install, err := os.ReadFile(filepath.Join(podDir(p), "install.log"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(install)).To(ContainSubstring("fake-vigil install " + filepath.Join(podDir(p), "volumes", "shared", "tool")))
		main, err := os.ReadFile(filepath.Join(podDir(p), "main.log"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(main)).To(Equal("ok http://vigil.test/ping/abc/start http://vigil.test/ping/abc\n"))

		// kubectl logs, through the API server, as for a kubelet.
		logs, err := cs.CoreV1().Pods(ns).GetLogs("ok", &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(logs)).To(Equal(string(main)))
	})

	It("reports a failing container's exit status and fails the pod", func() {
		// No volumes: the pod still gets its directory for the logs.
		fails := boundPod("fails", nil,
			corev1.Container{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "echo starting; echo oops >&2; exit 3"}})
		fails.Spec.Volumes = nil
		_, err := cs.CoreV1().Pods(ns).Create(ctx, fails, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(finished("fails")).WithTimeout(30 * time.Second).Should(And(
			HaveField("Status.Phase", corev1.PodFailed),
			HaveField("Status.ContainerStatuses", ConsistOf(HaveField("State.Terminated.ExitCode", int32(3)))),
			HaveField("Status.Message", ContainSubstring("exited with status 3")),
		))
		// The tail Vigil's Job controller asks for when a Job fails.
		lines := int64(1)
		logs, err := cs.CoreV1().Pods(ns).GetLogs("fails", &corev1.PodLogOptions{Container: "main", TailLines: &lines}).DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(logs)).To(Equal("oops\n"))
	})

	It("restarts a failed container of a restartPolicy OnFailure pod, counting restarts as a kubelet does", func() {
		// Fails on the first two runs, succeeds on the third: the pod's
		// directory survives restarts, as an emptyDir does.
		p := boundPod("flaky", nil, corev1.Container{Name: "main", Image: "busybox", VolumeMounts: mount,
			Command: []string{"sh", "-c", `n=$(cat /opt/shared/runs 2>/dev/null || echo 0); n=$((n+1)); echo $n > /opt/shared/runs; echo "run $n"; [ $n -ge 3 ]`}})
		p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(finished("flaky")).WithTimeout(30 * time.Second).Should(And(
			HaveField("Status.Phase", corev1.PodSucceeded),
			HaveField("Status.ContainerStatuses", ConsistOf(And(
				HaveField("RestartCount", int32(2)),
				HaveField("LastTerminationState.Terminated.ExitCode", int32(1)),
				HaveField("State.Terminated.ExitCode", int32(0)),
			))),
		))
		logs, err := cs.CoreV1().Pods(ns).GetLogs("flaky", &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(logs)).To(Equal("run 1\nrun 2\nrun 3\n"))
	})

	It("fails a pod whose command it cannot run, saying why", func() {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, boundPod("no-command", nil,
			corev1.Container{Name: "main", Image: "busybox"}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(finished("no-command")).WithTimeout(30 * time.Second).Should(And(
			HaveField("Status.Phase", corev1.PodFailed),
			HaveField("Status.Message", ContainSubstring("cannot run an image's own entrypoint")),
		))
		_, err = cs.CoreV1().Pods(ns).Create(ctx, boundPod("missing-secret", nil,
			corev1.Container{Name: "main", Image: "busybox", Command: []string{"true"}, Env: []corev1.EnvVar{{Name: "X",
				ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k"}}}}}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(finished("missing-secret")).WithTimeout(30 * time.Second).Should(And(
			HaveField("Status.Phase", corev1.PodFailed),
			HaveField("Status.Message", ContainSubstring("env X")),
		))
	})

	It("stops a running pod that is deleted and removes it, as a kubelet does", func() {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, boundPod("sleeper", nil,
			corev1.Container{Name: "main", Image: "busybox", Command: []string{"sleep", "300"}}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "sleeper", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(cs.CoreV1().Pods(ns).Delete(ctx, "sleeper", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, "sleeper", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(30 * time.Second).Should(BeTrue())
	})
})
