package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vigil-operator/vigil/internal/devenv"
	"github.com/vigil-operator/vigil/internal/devenv/execnode"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/scheme"
)

type devOptions struct {
	dir, assets, crdDir, install, namespace, httpAddr string
	kwok, kwokStages                                  string
	apiServerPort                                     int
}

func newDevCmd() *cobra.Command {
	o := devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run Vigil locally: a control plane, the CRDs, a demo project and the manager",
		Long: `dev starts etcd, kube-apiserver and kube-controller-manager on this machine
(data kept in --dir, so a restart loses nothing), installs Vigil's CRDs, creates
a demo namespace with API keys, and runs the manager with its HTTP server.
The manager runs as the install's ServiceAccount (vigil-system/vigil-manager)
under the RBAC of --install, which is applied except for its Deployment (there
is no container runtime): what runs here is allowed what it is allowed in a
cluster. It writes a kubeconfig and a shell-sourceable env file into --dir.
Ctrl-C stops everything. ` + "`make dev`" + ` builds the binaries it needs and runs it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDev(cmd.Context(), cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "bin/dev", "directory for etcd data, certificates, kubeconfig, env file and logs")
	f.StringVar(&o.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory holding etcd, kube-apiserver, kube-controller-manager and kubectl (default $KUBEBUILDER_ASSETS)")
	f.StringVar(&o.crdDir, "crd-dir", "config/crd/bases", "directory of the CRDs to install")
	f.StringVar(&o.install, "install", "dist/install.yaml", "the one-file install whose ServiceAccount and RBAC the manager runs under")
	f.StringVar(&o.kwok, "kwok", "", "kwok binary: simulate a node so that pods run and Jobs end (make dev sets it)")
	f.StringVar(&o.kwokStages, "kwok-stages", "config/dev/kwok-stages.yaml", "kwok's stage configuration")
	f.StringVar(&o.namespace, "namespace", "demo", "namespace of the demo project")
	f.StringVar(&o.httpAddr, "http-bind-address", "127.0.0.1:8000", "address of the Management API, ping and badge server")
	f.IntVar(&o.apiServerPort, "apiserver-port", 16443, "kube-apiserver port on 127.0.0.1")
	return cmd
}

func runDev(ctx context.Context, out io.Writer, o devOptions) error {
	if o.assets == "" {
		return errors.New("--assets (or $KUBEBUILDER_ASSETS) must name the directory of the control-plane binaries; `make dev` sets it")
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	assets, err := filepath.Abs(o.assets)
	if err != nil {
		return err
	}
	if err := resetOldDevData(out, dir); err != nil {
		return err
	}
	cp, err := devenv.Start(ctx, devenv.Options{
		Dir: dir, Assets: assets, CRDDir: o.crdDir, APIServerPort: o.apiServerPort,
		Namespace: o.namespace, Progress: out, Kwok: o.kwok, KwokStages: o.kwokStages,
	})
	defer func() {
		fmt.Fprintln(out, "stopping the control plane ...")
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(out, "error stopping the control plane:", err)
		}
	}()
	if err != nil {
		return err
	}

	c, err := client.New(cp.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	if o.kwok != "" {
		// kube-scheduler is running: add the node that runs pods for real.
		if err := startExecNode(ctx, out, cp, dir); err != nil {
			return err
		}
	}
	envFile := filepath.Join(dir, "env")
	keys, err := ensureDemoProject(ctx, c, o.namespace, envFile)
	if err != nil {
		return err
	}
	baseURL := "http://" + o.httpAddr
	vars := map[string]string{
		"KUBECONFIG":             cp.Kubeconfig,
		"VIGIL_URL":              baseURL,
		"VIGIL_API_KEY":          keys.readWrite,
		"VIGIL_API_KEY_READONLY": keys.readOnly,
		"VIGIL_PING_KEY":         keys.pingKey,
		"VIGIL_NAMESPACE":        o.namespace,
		"VIGIL_PROJECT_UUID":     project.UUID(o.namespace),
		"VIGIL_EGRESS_ALLOW":     egress.Loopback.String(), // for `vigil channels test`
		"PATH":                   assets + ":$PATH",
	}
	if err := writeEnvFile(envFile, vars); err != nil {
		return err
	}
	managerCfg, err := runAsInstalled(ctx, out, cp, o.install, dir)
	if err != nil {
		return err
	}
	printNextSteps(out, envFile, o.namespace, baseURL, keys)

	return manager.Run(ctx, managerCfg, manager.Options{
		Store:       "sqlite:" + filepath.Join(dir, "vigil.db"),
		HTTPAddr:    o.httpAddr,
		BaseURL:     baseURL,
		MetricsAddr: "127.0.0.1:8080",
		ProbeAddr:   "127.0.0.1:8081",
		// As installed: per-project limits from the ConfigMap in the
		// manager's namespace.
		LimitsConfigMap: types.NamespacedName{Namespace: devenv.ManagerNamespace, Name: project.DefaultLimitsConfigMap},
		// The webhook listener of docs/notifications.md, and anything else
		// on this machine, hears the notifications: loopback is allowed
		// here, never in an install.
		EgressAllow: egress.Loopback,
	})
}

// devLayout names the layout of the dev data directory: "store" since
// observed state moved from CheckHistory objects in etcd into the ping store
// (bin/dev/vigil.db).
const devLayout = "store"

// resetOldDevData starts the dev data directory afresh when an older
// build made it: its etcd holds CheckHistory objects this build has no CRD
// for, and pings that belong in the store.
func resetOldDevData(out io.Writer, dir string) error {
	marker := filepath.Join(dir, "layout")
	if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) == devLayout {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd")); err == nil {
		fmt.Fprintf(out, "%s was made by an older Vigil, which kept pings and flips in etcd (CheckHistory objects); "+
			"this one keeps them in a ping store. Starting it afresh: the demo project and its keys are made again.\n", dir)
		for _, sub := range []string{"etcd", "pki", "exec", "logs", "env", "kubeconfig", "lock", "vigil-manager.token"} {
			if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	return os.WriteFile(marker, []byte(devLayout+"\n"), 0o644)
}

// runAsInstalled applies the one-file install except its workload, and
// returns a config that reaches the API server as the manager's
// ServiceAccount, with a token from the TokenRequest API kept fresh in dir.
func runAsInstalled(ctx context.Context, out io.Writer, cp *devenv.ControlPlane, install, dir string) (*rest.Config, error) {
	data, err := os.ReadFile(install)
	if err != nil {
		return nil, fmt.Errorf("reading the install (make manifests writes it): %w", err)
	}
	objs, err := devenv.DecodeObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", install, err)
	}
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		return nil, err
	}
	if err := devenv.Apply(ctx, c, objs, devenv.IsWorkload); err != nil {
		return nil, fmt.Errorf("applying %s: %w", install, err)
	}
	cfg, err := devenv.ServiceAccountConfig(ctx, cp.Config, devenv.ManagerNamespace, devenv.ManagerServiceAccount, dir)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "applied %s (all but the StatefulSet); the manager runs as ServiceAccount %s/%s\n",
		install, devenv.ManagerNamespace, devenv.ManagerServiceAccount)
	return cfg, nil
}

// startExecNode registers the node that runs the pods bound to it as
// processes on this machine (internal/devenv/execnode), with `vigil` being
// this binary, and logs what it runs to logs/exec-node.log.
func startExecNode(ctx context.Context, out io.Writer, cp *devenv.ControlPlane, dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "logs", "exec-node.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	node := &execnode.Node{
		Client: cs, Name: devenv.ExecNode, Dir: filepath.Join(dir, "exec"),
		Programs: map[string]string{"vigil": self}, Log: logf,
	}
	go func() {
		defer logf.Close()
		if err := node.Run(ctx); err != nil {
			fmt.Fprintln(out, "exec node stopped:", err)
		}
	}()
	fmt.Fprintf(out, "node %s runs, as processes on this machine, the pods that select it (nodeSelector %s: \"true\" and its toleration); log in %s\n",
		devenv.ExecNode, execnode.LabelKey, logPath)
	return nil
}

type demoKeys struct{ readWrite, readOnly, pingKey string }

// ensureDemoProject creates the demo namespace and its keys, reusing the keys
// a previous run wrote to the env file while the project Secret still
// accepts them (keys are stored hashed, so they cannot be read back).
func ensureDemoProject(ctx context.Context, c client.Client, namespace, envFile string) (demoKeys, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return demoKeys{}, fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	data, err := project.EnsureProjectSecret(ctx, c, namespace)
	if err != nil {
		return demoKeys{}, err
	}
	stored := project.KeysFromSecretData(data)
	prev := readEnvFile(envFile)
	keys := demoKeys{pingKey: string(data[project.DataPingKey])}
	if k := prev["VIGIL_API_KEY"]; stored.Match(k) == project.ReadWrite {
		keys.readWrite = k
	} else if keys.readWrite, err = project.CreateAPIKey(ctx, c, namespace, project.ReadWrite); err != nil {
		return demoKeys{}, err
	}
	if k := prev["VIGIL_API_KEY_READONLY"]; stored.Match(k) == project.ReadOnly {
		keys.readOnly = k
	} else if keys.readOnly, err = project.CreateAPIKey(ctx, c, namespace, project.ReadOnly); err != nil {
		return demoKeys{}, err
	}
	return keys, nil
}

func readEnvFile(path string) map[string]string {
	vars := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return vars
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			vars[k] = strings.Trim(v, `"'`)
		}
	}
	return vars
}

func writeEnvFile(path string, vars map[string]string) error {
	var b strings.Builder
	b.WriteString("# Written by `make dev`. Load it into a shell with:  . " + path + "\n")
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "export %s=\"%s\"\n", k, vars[k])
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

func printNextSteps(out io.Writer, envFile, namespace, baseURL string, keys demoKeys) {
	fmt.Fprintf(out, `
Vigil is running.

  Dashboard        %[3]s/   (sign in with the API key below)
  Management API   %[3]s/api/v3/   (project: namespace %[2]q)
  API key          %[4]s   (read-only: %[5]s)
  Ping key         %[6]s
  Prometheus       %[3]s/projects/%[8]s/metrics/%[5]s

In another terminal:

  . %[1]s                                   # KUBECONFIG, VIGIL_URL, VIGIL_API_KEY, kubectl on PATH
  kubectl apply -f config/samples/
  kubectl apply -f config/samples/cronjobs/        # CronJobs: a policy, an annotation, vigil run, curl
  kubectl get checks
  curl -s -H "X-Api-Key: $VIGIL_API_KEY" $VIGIL_URL/api/v3/checks/

Ctrl-C stops everything; data is kept in %[7]s.

`, envFile, namespace, baseURL, keys.readWrite, keys.readOnly, keys.pingKey, filepath.Dir(envFile), project.UUID(namespace))
}
