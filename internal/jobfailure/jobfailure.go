// Package jobfailure explains why a Job of a monitored CronJob failed, or
// why its run has not started, in the plain words a fail ping's body and
// its notification carry: the Job's reason, then each pod's story (how
// each failed container ended, or why a pod never ran, from its status
// and its Events), with a hint where the cause is well known. It is pure:
// the Job controller reads the objects (under the manager's RBAC) and
// this package writes the text, bounded in size.
package jobfailure

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/vigil-operator/vigil/internal/words"
)

// Bounds of what an explanation says.
const (
	// MaxPods is how many pods' stories are told; pods whose stories are
	// the same are told once, with a count.
	MaxPods = 5
	// maxMessage bounds one message taken from a status or an Event.
	maxMessage = 300
	// MaxBytes bounds the whole explanation (a log tail comes after it).
	MaxBytes = 4000
)

// Input is what the Job controller read of a Job.
type Input struct {
	// Job has the Job's status (its conditions).
	Job *batchv1.Job
	// Pods are the Job's pods that still exist, with spec and status.
	Pods []corev1.Pod
	// Events are the Warning Events of the Job's pods, also of pods that
	// are gone (the Job controller deletes a failed Job's pending pods).
	Events []corev1.Event
	// TerminationMessages lets a container's termination message in: with
	// terminationMessagePolicy FallbackToLogsOnError it is the end of the
	// container's log, so it needs the same consent as the log.
	TerminationMessages bool
}

// Story is what happened to one pod.
type Story struct {
	Pod string
	// Ran: a container of the pod started.
	Ran bool
	// Text says how it ended or why it never ran, without the pod's name.
	Text string
	// Hint is the well-known cause in plain words, if any.
	Hint string
	// Container is the container whose log tells most (a failed one).
	Container string
}

// Failed is the story of the pod whose log tells most: the newest with a
// failed container; ok false when no pod failed that way.
func Failed(stories []Story) (Story, bool) {
	for _, s := range stories {
		if s.Ran && s.Container != "" {
			return s, true
		}
	}
	return Story{}, false
}

// Stories are the pods' stories, the newest pod first: pods with a failed
// container, and pods that never ran (from their status, or from their
// Events when they are gone).
func Stories(in Input) []Story {
	byPod := map[string][]corev1.Event{}
	for _, e := range in.Events {
		if e.InvolvedObject.Kind == "Pod" && e.Type == corev1.EventTypeWarning {
			byPod[e.InvolvedObject.Name] = append(byPod[e.InvolvedObject.Name], e)
		}
	}
	pods := slices.Clone(in.Pods)
	sort.SliceStable(pods, func(i, j int) bool { return pods[j].CreationTimestamp.Before(&pods[i].CreationTimestamp) })
	var out []Story
	seen := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		seen[p.Name] = true
		if s, ok := podStory(p, byPod[p.Name], in.TerminationMessages); ok {
			out = append(out, s)
		}
	}
	// Pods that are gone speak only through their Events: newest first.
	var gone []string
	for name := range byPod {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return lastSeen(byPod[gone[j]]).Before(lastSeen(byPod[gone[i]])) })
	for _, name := range gone {
		if text, hint, ok := fromEvents(byPod[name], nil); ok {
			out = append(out, Story{Pod: name, Text: "never ran: " + text, Hint: hint})
		}
	}
	return out
}

// lastSeen is when a pod's newest Event happened.
func lastSeen(events []corev1.Event) time.Time {
	var last time.Time
	for _, e := range events {
		if t := eventTime(e); t.After(last) {
			last = t
		}
	}
	return last
}

// eventTime is when an Event last happened, whichever API wrote it.
func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return e.CreationTimestamp.Time
}

// Explain is the explanation a fail ping carries after the Job's own
// first line: the hint for the Job's reason, then the pods' stories.
func Explain(in Input, stories []Story) []byte {
	var b strings.Builder
	if hint := jobHint(in.Job); hint != "" {
		b.WriteString("\n" + hint)
	}
	b.WriteString(Tell(stories))
	return Bound(b.String())
}

// Tell writes pods' stories, the same story once with a count.
func Tell(stories []Story) string {
	var b strings.Builder
	told := 0
	for i := 0; i < len(stories) && told < MaxPods; i++ {
		s := stories[i]
		same := 0
		for _, o := range stories[i+1:] {
			if o.Text == s.Text {
				same++
			}
		}
		if s.Text == "" || slices.ContainsFunc(stories[:i], func(o Story) bool { return o.Text == s.Text }) {
			continue
		}
		told++
		b.WriteString("\n\nPod " + s.Pod)
		if strings.HasPrefix(s.Text, "never ran") {
			b.WriteString(" " + s.Text)
		} else {
			b.WriteString(", " + s.Text)
		}
		if same > 0 {
			fmt.Fprintf(&b, " (and %d more pod(s) the same)", same)
		}
		if s.Hint != "" {
			b.WriteString("\nHint: " + s.Hint)
		}
	}
	return b.String()
}

// podStory tells how a pod ended, or why it has not run.
func podStory(p *corev1.Pod, events []corev1.Event, messages bool) (Story, bool) {
	s := Story{Pod: p.Name}
	var ended []string
	statuses := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			s.Ran = true
		}
		t := cs.State.Terminated
		if t == nil || t.ExitCode == 0 {
			continue
		}
		e := fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode)
		if t.Reason != "" {
			e += " (" + t.Reason + ")"
		}
		if msg := clip(t.Message); msg != "" && messages {
			e += ": " + msg
		}
		ended = append(ended, e)
		if s.Container == "" {
			s.Container = cs.Name
			s.Hint = exitHint(p, cs.Name, t)
		}
	}
	if len(ended) > 0 {
		s.Text = strings.Join(ended, "; ") + "."
		if p.Status.Reason != "" {
			s.Text += " The pod: " + p.Status.Reason + ": " + clip(p.Status.Message)
		}
		return s, true
	}
	if p.Status.Phase == corev1.PodFailed && p.Status.Reason != "" {
		// Evicted, DeadlineExceeded, a node that went away.
		s.Text = "failed: " + p.Status.Reason + ": " + clip(p.Status.Message)
		s.Hint = podReasonHint(p.Status.Reason)
		return s, true
	}
	if s.Ran || p.Status.Phase == corev1.PodSucceeded {
		return s, false
	}
	text, hint, ok := fromEvents(events, p)
	if !ok {
		return s, false
	}
	s.Text, s.Hint = "never ran: "+text, hint
	return s, true
}

// fromEvents tells why a pod never ran: from its status when it still
// exists (p), with the Events' more detailed words.
func fromEvents(events []corev1.Event, p *corev1.Pod) (text, hint string, ok bool) {
	var images, secrets []string
	if p != nil {
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			images = append(images, c.Image)
		}
		for _, s := range p.Spec.ImagePullSecrets {
			secrets = append(secrets, s.Name)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return "Unschedulable: " + clip(c.Message), unschedulableHint, true
			}
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			w := cs.State.Waiting
			if w == nil || !knownWaiting[w.Reason] {
				continue
			}
			msg := w.Message
			if detail := eventMessage(events, "Failed"); detail != "" && isImage(w.Reason) {
				msg = detail
			}
			return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, clip(msg)), waitingHint(w.Reason, cs.Image, secrets), true
		}
	}
	// Gone, or its status says nothing yet: the Events, the newest first.
	if msg := eventMessage(events, "FailedScheduling"); msg != "" {
		return "Unschedulable: " + msg, unschedulableHint, true
	}
	for _, e := range newestFirst(events) {
		reason := waitingReasonOf(e)
		if reason == "" {
			continue
		}
		image := quotedImage(e.Message)
		if image == "" && len(images) > 0 {
			image = images[0]
		}
		return reason + ": " + clip(e.Message), waitingHint(reason, image, secrets), true
	}
	return "", "", false
}

// knownWaiting are the waiting reasons of a container that cannot start
// without a change: what a "never ran" story is about.
var knownWaiting = map[string]bool{
	"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

func isImage(reason string) bool {
	return reason == "ImagePullBackOff" || reason == "ErrImagePull"
}

// waitingReasonOf reads a kubelet Event as a waiting reason.
func waitingReasonOf(e corev1.Event) string {
	m := e.Message
	switch {
	case e.Reason == "Failed" && strings.HasPrefix(m, "Failed to pull image"):
		return "ErrImagePull"
	case e.Reason == "BackOff" && strings.HasPrefix(m, "Back-off pulling image"):
		return "ImagePullBackOff"
	case e.Reason == "InspectFailed" || strings.Contains(m, "InvalidImageName"):
		return "InvalidImageName"
	case e.Reason == "Failed" && strings.HasPrefix(m, "Error: ") && !strings.Contains(m, "ImagePull"):
		return "CreateContainerConfigError"
	}
	return ""
}

// eventMessage is the newest message of the Events with this reason.
func eventMessage(events []corev1.Event, reason string) string {
	for _, e := range newestFirst(events) {
		// The kubelet's "Error: ErrImagePull" says less than the "Failed to
		// pull image ..." before it.
		if e.Reason == reason && (reason != "Failed" || !strings.HasPrefix(e.Message, "Error: ")) {
			return clip(e.Message)
		}
	}
	return ""
}

func newestFirst(events []corev1.Event) []corev1.Event {
	out := slices.Clone(events)
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[j]).Before(eventTime(out[i])) })
	return out
}

// quotedImage is the image an Event names ("... image \"x\" ...").
func quotedImage(msg string) string {
	_, after, ok := strings.Cut(msg, `image "`)
	if !ok {
		return ""
	}
	image, _, ok := strings.Cut(after, `"`)
	if !ok {
		return ""
	}
	return image
}

const unschedulableHint = "no node can take the pod. Compare its resource requests, nodeSelector, affinity and tolerations with the nodes (kubectl describe nodes), or add capacity."

// waitingHint is the plain-words cause of a container that cannot start.
func waitingHint(reason, image string, secrets []string) string {
	switch reason {
	case "ImagePullBackOff", "ErrImagePull":
		pull := "the pod has no imagePullSecrets"
		if len(secrets) > 0 {
			pull = "its imagePullSecrets (" + strings.Join(secrets, ", ") + ") give access"
		}
		if image == "" {
			return "the image could not be pulled: check its name and tag, that the registry is reachable from the nodes, and that " + pull + "."
		}
		return fmt.Sprintf("the image %q could not be pulled: check its name and tag, that the registry is reachable from the nodes, and that %s.", image, pull)
	case "InvalidImageName":
		return fmt.Sprintf("the image name %q is not a valid image reference.", image)
	case "ErrImageNeverPull":
		return "the image is not on the node and imagePullPolicy is Never."
	case "CreateContainerConfigError":
		return "a ConfigMap or Secret the container uses (env, envFrom or a volume) is missing or lacks a key; create it in the CronJob's namespace."
	case "CreateContainerError", "RunContainerError":
		return "the container runtime could not start the container: check its command, volumes and securityContext."
	}
	return ""
}

// exitHint is the well-known cause of a container's end.
func exitHint(p *corev1.Pod, container string, t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason == "OOMKilled":
		limit := "no memory limit is set, so the node ran out of memory"
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; c.Name == container && ok {
				limit = "its limit is " + q.String()
			}
		}
		return "the container used more memory than it may (" + limit + "): raise resources.limits.memory in the CronJob's jobTemplate, or make the job use less."
	case t.Reason == "ContainerCannotRun" || t.Reason == "StartError":
		return "the container could not be started: check the image's entrypoint and the command and args of the CronJob's jobTemplate."
	case t.ExitCode == 137:
		return "code 137 is a kill (SIGKILL): most often the memory limit, or the Job's activeDeadlineSeconds, or the node going away."
	case t.ExitCode == 143:
		return "code 143 is SIGTERM: the pod was stopped (the Job's activeDeadlineSeconds, an eviction or a node drain)."
	case t.ExitCode == 126 || t.ExitCode == 127:
		return "code 126/127 is the shell's: the command was not found or not executable in the image."
	}
	return ""
}

// podReasonHint explains a pod's own failure reason.
func podReasonHint(reason string) string {
	switch reason {
	case "Evicted":
		return "the node evicted the pod, usually for lack of memory or disk: set requests that match the job's use."
	case "DeadlineExceeded":
		return "the pod ran longer than its activeDeadlineSeconds."
	}
	return ""
}

// jobHint explains the Job's own failure reason.
func jobHint(job *batchv1.Job) string {
	if job == nil {
		return ""
	}
	for _, c := range job.Status.Conditions {
		if c.Type != batchv1.JobFailed || c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Reason {
		case batchv1.JobReasonBackoffLimitExceeded:
			return "Hint: every attempt failed, and the Job's backoffLimit allows no more: the pods below say why."
		case batchv1.JobReasonDeadlineExceeded:
			return "Hint: the Job ran longer than its activeDeadlineSeconds, and its pods were stopped."
		case batchv1.JobReasonPodFailurePolicy:
			return "Hint: a rule of the Job's podFailurePolicy failed it at once (the message names the rule)."
		case batchv1.JobReasonMaxFailedIndexesExceeded, batchv1.JobReasonFailedIndexes:
			return "Hint: indexes of this indexed Job failed past their backoffLimitPerIndex."
		}
	}
	return ""
}

// clip bounds a message taken from an object: one line, maxMessage bytes.
func clip(s string) string {
	return words.Clip(strings.Join(strings.Fields(s), " "), maxMessage)
}

// Bound keeps a text within MaxBytes, cut at a character.
func Bound(s string) []byte {
	if cut, ok := words.Cut(s, MaxBytes); ok {
		return []byte(cut + "\n(cut)")
	}
	return []byte(s)
}
