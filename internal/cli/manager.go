package cli

import (
	"github.com/spf13/cobra"

	"github.com/vigil-operator/vigil/internal/manager"
)

func newManagerCmd(g *globals) *cobra.Command {
	opts := manager.Options{}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the controllers and the HTTP server (what the Deployment runs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			return manager.Run(cmd.Context(), cfg, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.HTTPAddr, "http-bind-address", ":8000", "address of the Management API, ping and badge server")
	f.StringVar(&opts.BaseURL, "base-url", "http://localhost:8000", "URL clients reach the HTTP server at, used in returned ping, API and badge URLs")
	f.StringSliceVar(&opts.Namespaces, "namespaces", nil, "namespaces (projects) to serve and monitor; default all")
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8443", `address of the metrics endpoint ("0" disables it)`)
	f.BoolVar(&opts.MetricsSecure, "metrics-secure", true, "serve metrics over HTTPS with Kubernetes authentication and authorization")
	f.StringVar(&opts.ProbeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.BoolVar(&opts.LeaderElection, "leader-elect", true, "run the controllers in one replica at a time")
	f.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election lease (default: the manager's own)")
	return cmd
}
