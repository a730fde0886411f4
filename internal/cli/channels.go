package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/notify"
)

func newChannelsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "channels",
		Short: "Work with a project's notification channels",
	}
	var namespace, egressAllow string
	var allowRelays bool
	test := &cobra.Command{
		Use:   "test NAME",
		Short: "Send a test notification through a Channel and report the result",
		Long: "Sends a test notification (marked as a test) through the Channel, or through each member\n" +
			"of a group, with the Channels' Secrets read from their namespace, and exits non-zero when\n" +
			"a delivery fails. It connects from\n" +
			"this machine through the manager's egress guard: loopback, private and other non-global\n" +
			"addresses are refused unless --egress-allow allows them.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			allow, err := egress.ParseAllowlist(egressAllow)
			if err != nil {
				return fmt.Errorf("--egress-allow: %w", err)
			}
			namespace, err := g.namespace(cmd, namespace)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			ch := &v1.Channel{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: args[0]}, ch); err != nil {
				return err
			}
			err = notify.SendTest(ctx, c, ch, nil, notify.Delivery{Secret: notify.SecretsIn(c, namespace),
				Egress: egress.New(egress.Options{Allow: allow, AllowRelays: allowRelays})})
			if err != nil {
				return fmt.Errorf("channel %s/%s: test notification failed: %w", namespace, ch.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "channel %s/%s (%s): test notification delivered\n", namespace, ch.Name, ch.Spec.Kind)
			return nil
		},
	}
	test.Flags().StringVarP(&namespace, "namespace", "n", "", "the Channel's namespace (project; default: the kubeconfig context's, as kubectl)")
	test.Flags().StringVar(&egressAllow, "egress-allow", os.Getenv("VIGIL_EGRESS_ALLOW"),
		"CIDRs, addresses and host names the test may reach although the egress guard refuses them, as the manager's --egress-allow (default $VIGIL_EGRESS_ALLOW, which make dev's env file sets to loopback)")
	test.Flags().BoolVar(&allowRelays, "egress-allow-relays", false,
		"let an Apprise Channel's URLs from a Secret go to its Apprise server, as the manager's --egress-allow-relays")
	cmd.AddCommand(test)
	return cmd
}
