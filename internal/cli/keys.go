package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vigil-operator/vigil/internal/project"
)

func newKeysCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage a project's API keys (a project is a namespace)",
	}
	var namespace string
	var readOnly bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API key and print it once (only its hash is stored)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			access := project.ReadWrite
			if readOnly {
				access = project.ReadOnly
			}
			key, err := project.CreateAPIKey(cmd.Context(), c, namespace, access)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Created a %s API key for project %q (Secret %s/%s). It is shown only now:\n",
				access, namespace, namespace, project.DefaultSecretName)
			fmt.Fprintln(cmd.OutOrStdout(), key)
			return nil
		},
	}
	create.Flags().BoolVar(&readOnly, "read-only", false, "create a read-only key")

	list := &cobra.Command{
		Use:   "list",
		Short: "List a project's API keys (labels only; keys are stored hashed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			keys, err := project.ListKeys(cmd.Context(), c, namespace)
			if err != nil {
				return err
			}
			// The project UUID names the project in the Prometheus
			// endpoint's URL, as in the reference.
			fmt.Fprintf(cmd.ErrOrStderr(), "Project %q: UUID %s (Prometheus: /projects/%s/metrics/<read-only key>)\n",
				namespace, project.UUID(namespace), project.UUID(namespace))
			if len(keys) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "Project %q has no API keys; create one with: vigil keys create -n %s\n", namespace, namespace)
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SECRET\tACCESS\tKEY\tSTORED")
			for _, k := range keys {
				stored := "sha256"
				if !k.Hashed {
					stored = "plaintext"
				}
				fmt.Fprintf(w, "%s\t%s\t%s…\t%s\n", k.Secret, k.Access, k.Label, stored)
			}
			return w.Flush()
		},
	}
	for _, c := range []*cobra.Command{create, list} {
		c.Flags().StringVarP(&namespace, "namespace", "n", "default", "the project's namespace")
	}
	cmd.AddCommand(create, list)
	return cmd
}
