// Package cli implements the vigil command and its subcommands.
package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/scheme"
)

// Main runs the vigil command with args and returns the exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

// globals are flags every subcommand understands.
type globals struct {
	kubeconfig string
	zapOpts    zap.Options
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "vigil",
		Short:         "Vigil monitors recurring jobs from inside Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&g.zapOpts)))
		},
	}
	root.PersistentFlags().StringVar(&g.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	g.zapOpts.Development = false
	g.zapOpts.BindFlags(zfs)
	root.PersistentFlags().AddGoFlagSet(zfs)

	root.AddCommand(newManagerCmd(g), newDevCmd(), newKeysCmd(g))
	root.AddCommand(newPingCmd(), newRunCmd(), newChannelsCmd(g), newSnoozeCmd(g), newAckCmd(g), newInstallCmd(), newStoreCmd())
	return root
}

// restConfig loads the cluster connection the way kubectl does.
func (g *globals) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// namespace is the namespace flag's value, or when it was not given the
// kubeconfig context's namespace, as kubectl does ("default" without one).
func (g *globals) namespace(cmd *cobra.Command, flag string) (string, error) {
	if cmd.Flags().Changed("namespace") {
		return flag, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	return ns, nil
}

func (g *globals) client() (client.Client, error) {
	cfg, err := g.restConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}
