package jobfailure

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)

func pod(name string, age time.Duration, status corev1.PodStatus) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(age))},
		Spec: corev1.PodSpec{
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
			Containers: []corev1.Container{{Name: "backup", Image: "registry.example/backup:1.2",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
		},
		Status: status,
	}
}

func terminated(code int32, reason string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "backup",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}}
}

func waiting(reason, message string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "backup", Image: "registry.example/backup:1.2",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}}
}

func event(podName, reason, message string, at time.Duration) corev1.Event {
	return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: podName}, Type: corev1.EventTypeWarning,
		Reason: reason, Message: message, LastTimestamp: metav1.NewTime(t0.Add(at))}
}

func failedJob(reason string) *batchv1.Job {
	return &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason}}}}
}

func TestExplain(t *testing.T) {
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient memory."}}}
	tests := []struct {
		name      string
		in        Input
		want      []string
		not       []string
		container string // the failed container whose log tells most
	}{
		{name: "an error exit", in: Input{Job: failedJob("BackoffLimitExceeded"), Pods: []corev1.Pod{pod("b-1", 0, terminated(2, "Error"))}},
			want:      []string{"Hint: every attempt failed", "\n\nPod b-1, container backup exited with code 2 (Error)."},
			not:       []string{"\nHint: code"},
			container: "backup"},
		{name: "OOMKilled, with the limit", in: Input{Job: failedJob("BackoffLimitExceeded"), Pods: []corev1.Pod{pod("b-1", 0, terminated(137, "OOMKilled"))}},
			want: []string{"container backup exited with code 137 (OOMKilled).",
				"Hint: the container used more memory than it may (its limit is 64Mi): raise resources.limits.memory"},
			container: "backup"},
		{name: "a kill without a reason", in: Input{Pods: []corev1.Pod{pod("b-1", 0, terminated(137, ""))}},
			want: []string{"exited with code 137.", "Hint: code 137 is a kill (SIGKILL)"}, container: "backup"},
		{name: "an image that cannot be pulled, in the words of the kubelet's Event",
			in: Input{Job: failedJob("DeadlineExceeded"), Pods: []corev1.Pod{pod("b-1", 0, waiting("ImagePullBackOff", `Back-off pulling image "registry.example/backup:1.2"`))},
				Events: []corev1.Event{
					event("b-1", "Failed", `Failed to pull image "registry.example/backup:1.2": rpc error: code = NotFound desc = manifest unknown`, time.Second),
					event("b-1", "Failed", "Error: ErrImagePull", 2*time.Second)}},
			want: []string{"Hint: the Job ran longer than its activeDeadlineSeconds",
				"Pod b-1 never ran: container backup: ImagePullBackOff: Failed to pull image \"registry.example/backup:1.2\": rpc error: code = NotFound desc = manifest unknown",
				`Hint: the image "registry.example/backup:1.2" could not be pulled: check its name and tag, that the registry is reachable from the nodes, and that its imagePullSecrets (regcred) give access.`}},
		{name: "a missing Secret", in: Input{Pods: []corev1.Pod{pod("b-1", 0, waiting("CreateContainerConfigError", `secret "db-password" not found`))}},
			want: []string{`Pod b-1 never ran: container backup: CreateContainerConfigError: secret "db-password" not found`,
				"Hint: a ConfigMap or Secret the container uses"}},
		{name: "no node for it", in: Input{Pods: []corev1.Pod{pod("b-1", 0, unschedulable)}},
			want: []string{"Pod b-1 never ran: Unschedulable: 0/3 nodes are available: 3 Insufficient memory.", "Hint: no node can take the pod"}},
		{name: "a pod that is gone speaks through its Events", in: Input{Job: failedJob("DeadlineExceeded"), Events: []corev1.Event{
			event("b-9", "FailedScheduling", "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.", time.Minute)}},
			want: []string{"Pod b-9 never ran: Unschedulable: 0/1 nodes are available: 1 node(s) didn't match"}},
		{name: "a gone pod whose image could not be pulled", in: Input{Events: []corev1.Event{
			event("b-9", "BackOff", `Back-off pulling image "ghcr.io/acme/etl:v9"`, time.Minute)}},
			want: []string{`Pod b-9 never ran: ImagePullBackOff: Back-off pulling image "ghcr.io/acme/etl:v9"`,
				`Hint: the image "ghcr.io/acme/etl:v9" could not be pulled`, "the pod has no imagePullSecrets"}},
		{name: "the same story is told once, the newest pod first", in: Input{Pods: []corev1.Pod{
			pod("b-1", 0, terminated(1, "Error")), pod("b-2", time.Minute, terminated(1, "Error")), pod("b-3", 2*time.Minute, terminated(1, "Error"))}},
			want: []string{"Pod b-3, container backup exited with code 1 (Error). (and 2 more pod(s) the same)"},
			not:  []string{"Pod b-1", "Pod b-2"}, container: "backup"},
		{name: "an evicted pod", in: Input{Pods: []corev1.Pod{pod("b-1", 0, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted",
			Message: "The node was low on resource: memory."})}},
			want: []string{"Pod b-1, failed: Evicted: The node was low on resource: memory.", "Hint: the node evicted the pod"}},
		{name: "a pod that ran and is pending no more says nothing", in: Input{Pods: []corev1.Pod{pod("b-1", 0, corev1.PodStatus{Phase: corev1.PodSucceeded})}},
			not: []string{"Pod b-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stories := Stories(tt.in)
			got := string(Explain(tt.in, stories))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("has %q:\n%s", n, got)
				}
			}
			failed, ok := Failed(stories)
			if ok != (tt.container != "") || failed.Container != tt.container {
				t.Errorf("failed container %q (%v), want %q", failed.Container, ok, tt.container)
			}
		})
	}
}

// FuzzExplain: whatever a pod's status and Events say, the explanation is
// bounded, valid UTF-8, and each message on one line.
func FuzzExplain(f *testing.F) {
	f.Add("OOMKilled", "killed", "ImagePullBackOff", `Back-off pulling image "x"`, "Failed", `Failed to pull image "x": no`, int32(137))
	f.Add("", "", "CreateContainerConfigError", "", "FailedScheduling", strings.Repeat("é", 400), int32(1))
	f.Fuzz(func(t *testing.T, termReason, termMsg, waitReason, waitMsg, eventReason, eventMsg string, code int32) {
		in := Input{Job: failedJob(termReason)}
		for i := range 8 {
			p := pod("p-"+string(rune('a'+i)), time.Duration(i)*time.Second, terminated(code, termReason))
			p.Status.ContainerStatuses[0].State.Terminated.Message = termMsg + strings.Repeat("x", i*100)
			in.Pods = append(in.Pods, p, pod("w-"+string(rune('a'+i)), 0, waiting(waitReason, waitMsg)))
			in.Events = append(in.Events, event("w-"+string(rune('a'+i)), eventReason, eventMsg, time.Duration(i)), event("gone", eventReason, eventMsg, 0))
		}
		got := Explain(in, Stories(in))
		if len(got) > MaxBytes+len("\n(cut)") {
			t.Fatalf("%d bytes", len(got))
		}
		if utf8.ValidString(termMsg+waitMsg+eventMsg+termReason) && !utf8.Valid(got) {
			t.Fatal("not valid UTF-8")
		}
	})
}
