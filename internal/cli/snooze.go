package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/maintenance"
)

func newSnoozeCmd(g *globals) *cobra.Command {
	var namespace string
	var off bool
	cmd := &cobra.Command{
		Use:   "snooze CHECK [DURATION]",
		Short: "Hold a check's notifications for a while (a one-off MaintenanceWindow)",
		Long: "Holds the notifications of the Check named CHECK from now for DURATION (such as 30m or 2h,\n" +
			"at most 744h): pings and flips are still recorded, and when the snooze ends a check still\n" +
			"down is announced once. Snoozing again moves the snooze; --off ends it now. It writes the\n" +
			"MaintenanceWindow snooze-CHECK with your kubeconfig's credentials, which need to create and\n" +
			"update MaintenanceWindows in the namespace (the edit role allows it).",
		Example: "  vigil snooze -n team-a nightly-backup 2h\n  vigil snooze -n team-a nightly-backup --off",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if off == (len(args) == 2) {
				return fmt.Errorf("give either a DURATION or --off")
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
			check := &v1.Check{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: args[0]}, check); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if off {
				if err := maintenance.EndSnooze(ctx, c, c, check); err != nil {
					return err
				}
				fmt.Fprintf(out, "check %s/%s: snooze ended\n", namespace, check.Name)
				return nil
			}
			d, err := time.ParseDuration(args[1])
			if err != nil {
				return fmt.Errorf("DURATION %q: %w (use a Go duration such as 30m or 2h)", args[1], err)
			}
			mw, err := maintenance.ApplySnooze(ctx, c, c, check, time.Now(), d)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "check %s/%s: notifications held until %s (MaintenanceWindow %s)\n",
				namespace, check.Name, mw.Spec.To.UTC().Format(time.RFC3339), mw.Name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the Check's namespace (project; default: the kubeconfig context's, as kubectl)")
	cmd.Flags().BoolVar(&off, "off", false, "end the check's snooze now")
	return cmd
}
