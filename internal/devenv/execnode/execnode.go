// Package execnode stands in for a kubelet in `make dev`, where there is no
// container runtime: it registers a Node and runs the pods the scheduler
// binds to it as processes on this machine, so that a job's own command
// (a `vigil run` wrapper, a curl to its ping URL) really runs and its exit
// status really ends the Job.
//
// It runs what a pod's containers say, with the image ignored: the program
// is found in an emptyDir volume (as an init container left it), among the
// programs it is given by name (vigil itself), or on this machine's PATH.
// Only pods that ask for it run here: the node is tainted, and a pod needs
// the toleration and node selector that config/samples/cronjobs/ shows.
// It is a development aid that runs commands as the developer, not a
// sandbox; it is never part of the manager.
package execnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Label and taint that select the node: a pod runs here only with
// nodeSelector {vigil.dev/exec: "true"} and a toleration of the taint.
const (
	LabelKey = "vigil.dev/exec"
	TaintKey = "vigil.dev/exec"
)

// heartbeat is how often the node reports itself Ready; the node lifecycle
// controller marks a node unreachable after 40 s without one.
const heartbeat = 10 * time.Second

// Node runs the pods bound to one node as local processes.
type Node struct {
	// Client reaches the API server.
	Client kubernetes.Interface
	// Name is the node's name.
	Name string
	// Dir holds each pod's emptyDir volumes and container logs.
	Dir string
	// Programs maps a program name (the last element of a container's
	// command) to a local binary, such as "vigil" to this executable.
	Programs map[string]string
	// Log receives one line per pod event.
	Log io.Writer
	// RestartBackoff is the wait before a container of a restartPolicy
	// OnFailure pod runs again, doubled after each failure up to five
	// minutes, as a kubelet's crash-loop back-off; 10 s when zero.
	RestartBackoff time.Duration

	mu       sync.Mutex
	running  map[types.UID]context.CancelCauseFunc // the pods whose processes run, by UID
	logsPort int32
}

// errDeleted is the cause a running pod's context is cancelled with when
// the pod is deleted: once its processes have stopped, the node removes it.
var errDeleted = errors.New("pod deleted")

// Run registers the node and runs its pods until ctx ends.
func (n *Node) Run(ctx context.Context) error {
	n.running = map[types.UID]context.CancelCauseFunc{}
	if n.Log == nil {
		n.Log = io.Discard
	}
	port, err := n.serveLogs(ctx)
	if err != nil {
		return fmt.Errorf("serving container logs: %w", err)
	}
	n.logsPort = int32(port)
	if err := n.register(ctx); err != nil {
		return fmt.Errorf("registering node %s: %w", n.Name, err)
	}
	go n.keepReady(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(n.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", n.Name).String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n.sync(ctx, obj) },
		UpdateFunc: func(_, obj any) { n.sync(ctx, obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

func (n *Node) register(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{
			"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", LabelKey: "true",
		}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: TaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
	}
	_, err := n.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return n.report(ctx)
}

// report writes the node's status: Ready, with room for many pods.
func (n *Node) report(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := n.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		room := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
			corev1.ResourcePods: resource.MustParse("110"),
		}
		node.Status.Capacity, node.Status.Allocatable = room, room
		node.Status.Phase = corev1.NodeRunning
		// Only the loopback address: the API server reaches a node's log
		// endpoint at its first address, and the node's name resolves to
		// nothing.
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = n.logsPort
		node.Status.NodeInfo.KubeletVersion = "vigil-dev-exec"
		node.Status.NodeInfo.OperatingSystem, node.Status.NodeInfo.Architecture = "linux", "amd64"
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "ExecNodeReady",
			Message: "vigil dev runs this node's pods as local processes", LastHeartbeatTime: now, LastTransitionTime: now,
		}}
		_, err = n.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

func (n *Node) keepReady(ctx context.Context) {
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := n.report(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(n.Log, "exec node: reporting ready: %v\n", err)
			}
		}
	}
}

func (n *Node) sync(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	n.mu.Lock()
	cancel, running := n.running[pod.UID]
	if running && pod.DeletionTimestamp != nil {
		// Under the lock: the pod's goroutine leaves running under it
		// too, so it either sees this cause or has already left, and then
		// the pod is removed below.
		cancel(errDeleted)
	}
	n.mu.Unlock()
	switch {
	case pod.DeletionTimestamp != nil:
		// A kubelet stops the containers and then removes the pod for
		// good; until it does, the pod stays Terminating. A running pod
		// is removed by its goroutine once its processes have stopped.
		if !running {
			go n.remove(ctx, pod)
		}
	case running:
	case pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "":
		podCtx, cancel := context.WithCancelCause(ctx)
		n.mu.Lock()
		n.running[pod.UID] = cancel
		n.mu.Unlock()
		go func() {
			defer cancel(nil)
			n.runPod(podCtx, pod.DeepCopy())
			n.mu.Lock()
			delete(n.running, pod.UID)
			n.mu.Unlock()
			if errors.Is(context.Cause(podCtx), errDeleted) {
				n.remove(ctx, pod)
			}
		}()
	case pod.Status.Phase == corev1.PodRunning:
		// Running, but not by this process: vigil dev restarted under it.
		n.finish(ctx, pod, corev1.PodFailed, "NodeRestarted", "vigil dev restarted while the pod ran", nil)
	}
}

func (n *Node) remove(ctx context.Context, pod *corev1.Pod) {
	zero := int64(0)
	err := n.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		fmt.Fprintf(n.Log, "exec node: removing pod %s/%s: %v\n", pod.Namespace, pod.Name, err)
	}
}

// runPod runs the init containers one after another, then the containers
// together, and reports each step in the pod's status.
func (n *Node) runPod(ctx context.Context, pod *corev1.Pod) {
	dir := filepath.Join(n.Dir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		n.finish(ctx, pod, corev1.PodFailed, "PodDirectory", err.Error(), nil)
		return
	}
	mnt, err := volumes(pod, dir)
	if err != nil {
		n.finish(ctx, pod, corev1.PodFailed, "UnsupportedVolume", err.Error(), nil)
		return
	}
	started := metav1.Now()
	n.setStatus(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase, st.StartTime, st.HostIP, st.PodIP = corev1.PodPending, &started, "127.0.0.1", "127.0.0.1"
		st.PodIPs = []corev1.PodIP{{IP: "127.0.0.1"}}
		st.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
	})
	var inits []corev1.ContainerStatus
	for _, c := range pod.Spec.InitContainers {
		res := n.runContainer(ctx, pod, c, mnt, dir)
		inits = append(inits, res.status(c))
		if res.code != 0 {
			n.finish(ctx, pod, corev1.PodFailed, "InitContainerFailed", res.message(c), func(st *corev1.PodStatus) {
				st.InitContainerStatuses = inits
			})
			return
		}
	}
	n.setStatus(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		st.InitContainerStatuses = inits
		st.ContainerStatuses = nil
		for _, c := range pod.Spec.Containers {
			cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image}
			setRunning(&cs)
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
		}
		setCondition(st, corev1.PodInitialized, corev1.ConditionTrue)
		setCondition(st, corev1.PodReady, corev1.ConditionTrue)
		setCondition(st, corev1.ContainersReady, corev1.ConditionTrue)
	})
	results := make([]result, len(pod.Spec.Containers))
	var wg sync.WaitGroup
	for i, c := range pod.Spec.Containers {
		wg.Go(func() { results[i] = n.runRestarting(ctx, pod, c, mnt, dir) })
	}
	wg.Wait()
	phase, reason, message := corev1.PodSucceeded, "", ""
	for i, r := range results {
		if r.code != 0 {
			phase, reason, message = corev1.PodFailed, "Error", r.message(pod.Spec.Containers[i])
		}
	}
	n.finish(ctx, pod, phase, reason, message, func(st *corev1.PodStatus) {
		st.InitContainerStatuses = inits
		st.ContainerStatuses = nil
		for i, c := range pod.Spec.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, results[i].status(c))
		}
	})
}

// runRestarting runs a container, and for a restartPolicy OnFailure pod
// runs it again after each non-zero exit, reporting the restart count and
// the last termination as a kubelet does: the Job controller counts those
// restarts against the Job's backoffLimit, and deletes the pod when it is
// reached. A container that cannot start at all is not restarted.
func (n *Node) runRestarting(ctx context.Context, pod *corev1.Pod, c corev1.Container, mnt mounts, dir string) result {
	backoff := n.RestartBackoff
	if backoff <= 0 {
		backoff = 10 * time.Second
	}
	var restarts int32
	var last corev1.ContainerState
	for {
		res := n.runContainer(ctx, pod, c, mnt, dir)
		res.restarts, res.last = restarts, last
		if res.code == 0 || res.err != nil || pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure || ctx.Err() != nil {
			return res
		}
		restarts++
		last = res.status(c).State
		n.setContainer(ctx, pod, c.Name, func(cs *corev1.ContainerStatus) {
			cs.RestartCount, cs.LastTerminationState, cs.Ready, cs.Started = restarts, last, false, ptr.To(false)
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container %s", backoff, c.Name)}}
		})
		fmt.Fprintf(n.Log, "exec node: pod %s/%s container %s restarts in %s (restart %d)\n", pod.Namespace, pod.Name, c.Name, backoff, restarts)
		select {
		case <-ctx.Done():
			return res
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Minute)
		n.setContainer(ctx, pod, c.Name, setRunning)
	}
}

// setRunning marks a container started, ready and running since now.
func setRunning(cs *corev1.ContainerStatus) {
	cs.Ready, cs.Started = true, ptr.To(true)
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
}

// result is how one container's process ended.
type result struct {
	code          int32
	err           error // the process could not start
	start, finish metav1.Time
	restarts      int32
	last          corev1.ContainerState // the termination before the last restart
}

func (r result) status(c corev1.Container) corev1.ContainerStatus {
	reason := "Completed"
	if r.code != 0 {
		reason = "Error"
	}
	msg := ""
	if r.err != nil {
		reason, msg = "StartError", r.err.Error()
	}
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Started: ptr.To(false),
		RestartCount: r.restarts, LastTerminationState: r.last, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: r.code, Reason: reason, Message: msg, StartedAt: r.start, FinishedAt: r.finish},
		}}
}

func (r result) message(c corev1.Container) string {
	if r.err != nil {
		return fmt.Sprintf("container %s: %v", c.Name, r.err)
	}
	return fmt.Sprintf("container %s exited with status %d", c.Name, r.code)
}

// volumes makes each emptyDir volume a directory under dir and returns the
// mounts of every container by mount path. Other kinds of volume would
// need a kubelet.
func volumes(pod *corev1.Pod, dir string) (mounts, error) {
	byVolume := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil {
			return mounts{}, fmt.Errorf("volume %s: the dev exec node supports only emptyDir volumes", v.Name)
		}
		p := filepath.Join(dir, "volumes", v.Name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return mounts{}, err
		}
		byVolume[v.Name] = p
	}
	dirs := map[string]string{}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if p, ok := byVolume[m.Name]; ok {
				dirs[path.Clean(m.MountPath)] = filepath.Join(p, m.SubPath)
			}
		}
	}
	return newMounts(dirs), nil
}

func (n *Node) runContainer(ctx context.Context, pod *corev1.Pod, c corev1.Container, mnt mounts, dir string) result {
	res := result{start: metav1.Now()}
	defer func() { res.finish = metav1.Now() }()
	env, vars, err := n.env(ctx, pod, c)
	if err != nil {
		res.code, res.err = 128, err
		return res
	}
	argv := append(append([]string(nil), c.Command...), c.Args...)
	if len(argv) == 0 {
		res.code, res.err = 128, fmt.Errorf("no command: the dev exec node cannot run an image's own entrypoint; give the container a command")
		return res
	}
	for i := range argv {
		argv[i] = mnt.rewrite(expand(argv[i], vars))
	}
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		env[i] = k + "=" + mnt.rewrite(v)
	}
	program, err := n.program(argv[0])
	if err != nil {
		res.code, res.err = 127, err
		return res
	}
	logFile, err := os.OpenFile(filepath.Join(dir, c.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		res.code, res.err = 128, err
		return res
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, program, argv[1:]...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "HOSTNAME=" + pod.Name}, env...)
	cmd.Dir = dir
	if c.WorkingDir != "" {
		if wd := mnt.rewrite(c.WorkingDir); wd != c.WorkingDir {
			cmd.Dir = wd
		}
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The container's processes are one group, stopped together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	fmt.Fprintf(n.Log, "exec node: pod %s/%s container %s: %s\n", pod.Namespace, pod.Name, c.Name, strings.Join(argv, " "))
	err = cmd.Run()
	switch {
	case err == nil:
	case cmd.ProcessState != nil:
		res.code = int32(cmd.ProcessState.ExitCode())
		if res.code < 0 { // killed by a signal
			res.code = 137
		}
	default:
		res.code, res.err = 128, err
	}
	fmt.Fprintf(n.Log, "exec node: pod %s/%s container %s exited with %d (log: %s)\n", pod.Namespace, pod.Name, c.Name, res.code, logFile.Name())
	return res
}

// program finds the binary for a container's command: a path inside a
// volume as is, then the programs given by name, then the PATH.
func (n *Node) program(name string) (string, error) {
	if filepath.IsAbs(name) {
		if st, err := os.Stat(name); err == nil && !st.IsDir() {
			return name, nil
		}
	}
	base := path.Base(name)
	if p, ok := n.Programs[base]; ok {
		return p, nil
	}
	p, err := exec.LookPath(base)
	if err != nil {
		return "", fmt.Errorf("%s: not found on this machine (the dev exec node runs commands here, not in the image)", name)
	}
	return p, nil
}

// env resolves a container's environment (values, Secret and ConfigMap
// keys, and the pod's own fields), as NAME=value pairs in order and as a
// map for $(VAR) expansion.
func (n *Node) env(ctx context.Context, pod *corev1.Pod, c corev1.Container) ([]string, map[string]string, error) {
	src := &envSources{ctx: ctx, node: n, namespace: pod.Namespace, read: map[string]map[string]string{}}
	var out []string
	vars := map[string]string{}
	for _, from := range c.EnvFrom {
		var data map[string]string
		var err error
		switch {
		case from.SecretRef != nil:
			data, err = src.get(kindSecret, from.SecretRef.Name)
			if missingOptional(err, from.SecretRef.Optional) {
				continue
			}
		case from.ConfigMapRef != nil:
			data, err = src.get(kindConfigMap, from.ConfigMapRef.Name)
			if missingOptional(err, from.ConfigMapRef.Optional) {
				continue
			}
		}
		if err != nil {
			return nil, nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			vars[from.Prefix+k] = data[k]
			out = append(out, from.Prefix+k+"="+data[k])
		}
	}
	for _, e := range c.Env {
		v, err := envValue(src, pod, e, vars)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		vars[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out, vars, nil
}

const (
	kindSecret    = "secret"
	kindConfigMap = "config map"
)

// envSources reads the Secrets and ConfigMaps a container's env names, each
// once however many variables come from it.
type envSources struct {
	ctx       context.Context
	node      *Node
	namespace string
	read      map[string]map[string]string // by kind and name
}

func (s *envSources) get(kind, name string) (map[string]string, error) {
	if data, ok := s.read[kind+"/"+name]; ok {
		return data, nil
	}
	data := map[string]string{}
	if kind == kindSecret {
		secret, err := s.node.Client.CoreV1().Secrets(s.namespace).Get(s.ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		for k, v := range secret.Data {
			data[k] = string(v)
		}
	} else {
		cm, err := s.node.Client.CoreV1().ConfigMaps(s.namespace).Get(s.ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		for k, v := range cm.Data {
			data[k] = v
		}
	}
	s.read[kind+"/"+name] = data
	return data, nil
}

// key returns one key of a source; "" when the source or the key is
// missing and optional.
func (s *envSources) key(kind, name, key string, optional *bool) (string, error) {
	data, err := s.get(kind, name)
	if missingOptional(err, optional) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	v, ok := data[key]
	if !ok && !ptr.Deref(optional, false) {
		return "", fmt.Errorf("%s %s has no key %s", kind, name, key)
	}
	return v, nil
}

func envValue(src *envSources, pod *corev1.Pod, e corev1.EnvVar, vars map[string]string) (string, error) {
	from := e.ValueFrom
	switch {
	case from == nil:
		return expand(e.Value, vars), nil
	case from.SecretKeyRef != nil:
		return src.key(kindSecret, from.SecretKeyRef.Name, from.SecretKeyRef.Key, from.SecretKeyRef.Optional)
	case from.ConfigMapKeyRef != nil:
		return src.key(kindConfigMap, from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, from.ConfigMapKeyRef.Optional)
	case from.FieldRef != nil:
		switch from.FieldRef.FieldPath {
		case "metadata.name":
			return pod.Name, nil
		case "metadata.namespace":
			return pod.Namespace, nil
		case "metadata.uid":
			return string(pod.UID), nil
		case "spec.nodeName":
			return pod.Spec.NodeName, nil
		case "spec.serviceAccountName":
			return pod.Spec.ServiceAccountName, nil
		case "status.podIP", "status.hostIP":
			return "127.0.0.1", nil
		}
		if k, ok := strings.CutPrefix(from.FieldRef.FieldPath, "metadata.labels['"); ok {
			return pod.Labels[strings.TrimSuffix(k, "']")], nil
		}
		if k, ok := strings.CutPrefix(from.FieldRef.FieldPath, "metadata.annotations['"); ok {
			return pod.Annotations[strings.TrimSuffix(k, "']")], nil
		}
		return "", fmt.Errorf("fieldRef %s is not supported by the dev exec node", from.FieldRef.FieldPath)
	}
	return "", fmt.Errorf("this kind of valueFrom is not supported by the dev exec node")
}

// expand replaces $(VAR) with the variable's value, as the kubelet does in
// commands, arguments and env values; $$ escapes, and an unknown $(VAR)
// stays as written.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// mounts maps the mount paths of a pod's emptyDir volumes to their
// directories on this machine.
type mounts struct {
	dirs  map[string]string
	paths []string // the keys of dirs, longest first, so /a/b wins over /a
}

func newMounts(dirs map[string]string) mounts {
	m := mounts{dirs: dirs}
	for p := range dirs {
		m.paths = append(m.paths, p)
	}
	sort.Slice(m.paths, func(i, j int) bool { return len(m.paths[i]) > len(m.paths[j]) })
	return m
}

// rewrite maps paths inside mounted volumes to their directories on this
// machine, wherever they appear as a path in s (a whole argument or a word
// of a shell script); anything else is left alone.
func (m mounts) rewrite(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		matched := false
		if i == 0 || strings.ContainsRune(pathStart, rune(s[i-1])) {
			for _, p := range m.paths {
				end := i + len(p)
				if strings.HasPrefix(s[i:], p) && (end == len(s) || strings.ContainsRune(pathEnd, rune(s[end]))) {
					b.WriteString(m.dirs[p])
					i, matched = end, true
					break
				}
			}
		}
		if !matched {
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// Characters around a path in a command line or script.
const (
	pathStart = " \t\n\"'=:;(`"
	pathEnd   = "/ \t\n\"';:)`"
)

// finish records the pod's end: its phase and, with set, its containers.
func (n *Node) finish(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, reason, message string, set func(*corev1.PodStatus)) {
	n.setStatus(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase, st.Reason, st.Message = phase, reason, message
		if set != nil {
			set(st)
		}
		setCondition(st, corev1.PodReady, corev1.ConditionFalse)
		setCondition(st, corev1.ContainersReady, corev1.ConditionFalse)
	})
	fmt.Fprintf(n.Log, "exec node: pod %s/%s %s %s\n", pod.Namespace, pod.Name, phase, message)
}

func (n *Node) setStatus(ctx context.Context, pod *corev1.Pod, set func(*corev1.PodStatus)) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := n.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return nil
		}
		set(&cur.Status)
		_, err = n.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		fmt.Fprintf(n.Log, "exec node: updating pod %s/%s: %v\n", pod.Namespace, pod.Name, err)
	}
}

// setContainer updates the status of the pod's container of that name.
func (n *Node) setContainer(ctx context.Context, pod *corev1.Pod, name string, f func(*corev1.ContainerStatus)) {
	n.setStatus(ctx, pod, func(st *corev1.PodStatus) {
		for i := range st.ContainerStatuses {
			if cs := &st.ContainerStatuses[i]; cs.Name == name {
				f(cs)
			}
		}
	})
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != s {
				st.Conditions[i].Status, st.Conditions[i].LastTransitionTime = s, metav1.Now()
			}
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.Now()})
}

// missingOptional tells whether err is an optional source not being there,
// which a kubelet ignores.
func missingOptional(err error, optional *bool) bool {
	return err != nil && apierrors.IsNotFound(err) && ptr.Deref(optional, false)
}
