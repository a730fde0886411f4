package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/notify"
)

func newChannelsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "channels",
		Short: "Work with a project's notification channels",
	}
	var namespace string
	test := &cobra.Command{
		Use:   "test NAME",
		Short: "Send a test notification through a Channel and report the result",
		Long: "Sends a test notification (marked as a test) through the Channel, with the Channel's\n" +
			"Secrets read from its namespace, and exits non-zero when delivery fails.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			msg := notify.Message{Test: true, Check: notify.CheckInfo{Namespace: namespace, Object: "test", Name: "Test check"}}
			err = notify.Send(ctx, notify.Delivery{Channel: ch, Message: msg, Secret: notify.SecretsIn(c, namespace)})
			if err != nil {
				return fmt.Errorf("channel %s/%s: test notification failed: %w", namespace, ch.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "channel %s/%s (%s): test notification delivered\n", namespace, ch.Name, ch.Spec.Kind)
			return nil
		},
	}
	test.Flags().StringVarP(&namespace, "namespace", "n", "default", "the Channel's namespace (project)")
	cmd.AddCommand(test)
	return cmd
}
