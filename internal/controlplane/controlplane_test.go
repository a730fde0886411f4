package controlplane_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vigil-operator/vigil/internal/controlplane"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// TestStart starts a real etcd and kube-apiserver, uses them as envtest's
// users do, and stops them.
func TestStart(t *testing.T) {
	ctx := context.Background()
	assets, err := testenv.Assets()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{Assets: assets})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cp.Stop()
		}
	})

	admin, err := cp.Config("admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(admin)
	// The default namespace is there on return; a new one can be made.
	if _, err := cs.CoreV1().Namespaces().Get(ctx, corev1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "start-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The TokenRequest API signs a ServiceAccount's token, as a pod's.
	if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token, err := cs.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, "app", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil || token.Status.Token == "" {
		t.Fatalf("a ServiceAccount token: %v", err)
	}
	// RBAC decides: a user in no group may not list namespaces.
	nobody, err := cp.Config("nobody")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(nobody).CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a user without roles listing namespaces: %v, want Forbidden", err)
	}

	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if resp, err := http.Get(cp.EtcdURL + "/health"); err == nil { //nolint:noctx // a refusal is expected at once
		_ = resp.Body.Close()
		t.Error("etcd still answers after Stop")
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, corev1.NamespaceDefault, metav1.GetOptions{}); err == nil {
		t.Error("kube-apiserver still answers after Stop")
	}
}

// fakeAssets writes an etcd that runs script, and a kube-apiserver that is
// never reached, into a directory of their own.
func fakeAssets(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"etcd": script, "kube-apiserver": "exit 1"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A process that exits during its start: the error says so, with its exit
// status and its last lines of output.
func TestStartExitedSaysWhy(t *testing.T) {
	assets := fakeAssets(t, `echo "first line"; echo "cannot open the data directory" >&2; exit 3`)
	_, err := controlplane.Start(context.Background(), controlplane.Options{Assets: assets})
	if err == nil {
		t.Fatal("no error from a start whose etcd exited")
	}
	for _, want := range []string{"etcd exited before it was ready", "exit status 3", "first line", "cannot open the data directory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}

// A process that is not ready in time: the error says so, with its last
// lines of output, and the process is stopped.
func TestStartTimeoutStopsIt(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	assets := fakeAssets(t, `echo $$ > `+pidFile+`; echo "waiting for a disk"; exec sleep 600`)
	_, err := controlplane.Start(context.Background(), controlplane.Options{Assets: assets, StartTimeout: time.Second})
	if err == nil {
		t.Fatal("no error from a start whose etcd never became ready")
	}
	for _, want := range []string{"etcd was not ready within 1s", "waiting for a disk"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if pid := readPID(t, pidFile); alive(pid) {
		t.Errorf("etcd (pid %d) still runs after the failed start", pid)
	}
}

// helperEnv makes the test binary a process that starts a control plane
// and is then killed.
const helperEnv = "CONTROLPLANE_TEST_HELPER_ASSETS"

// A test process that is killed, as a timeout or a Ctrl-C kills it, takes
// its control plane's processes with it.
func TestProcessesDieWithTheirParent(t *testing.T) {
	if assets := os.Getenv(helperEnv); assets != "" {
		_, err := controlplane.Start(context.Background(), controlplane.Options{Assets: assets, StartTimeout: time.Hour})
		t.Fatalf("the start returned: %v", err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	assets := fakeAssets(t, `echo $$ > `+pidFile+`.tmp; mv `+pidFile+`.tmp `+pidFile+`; exec sleep 600`)
	helper := exec.Command(os.Args[0], "-test.run=^TestProcessesDieWithTheirParent$") //nolint:noctx // killed below
	helper.Env = append(os.Environ(), helperEnv+"="+assets)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	g := gomega.NewWithT(t)
	g.Eventually(func() error { _, err := os.Stat(pidFile); return err }).WithTimeout(time.Minute).Should(gomega.Succeed())
	pid := readPID(t, pidFile)
	g.Expect(alive(pid)).To(gomega.BeTrue(), "etcd runs while its parent does")
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	g.Eventually(func() bool { return alive(pid) }).WithTimeout(30*time.Second).Should(gomega.BeFalse(), "etcd outlived its parent")
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// alive says whether a process runs (and is not a zombie waiting for its
// parent to collect it).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command's name in parentheses.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
