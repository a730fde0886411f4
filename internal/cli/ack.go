package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/runner"
	"github.com/vigil-operator/vigil/internal/version"
)

// apiKeyEnv holds the API key `vigil ack` presents: not a flag, so that it
// stays out of shell histories and process lists.
const apiKeyEnv = "VIGIL_API_KEY"

func newAckCmd(g *globals) *cobra.Command {
	var namespace, baseURL string
	cmd := &cobra.Command{
		Use:   "ack CHECK",
		Short: "Acknowledge a check's down: its re-alerts and escalation stop until it recovers",
		Long: "Acknowledges the current down of CHECK through Vigil's API (POST /api/v3/checks/<uuid>/ack):\n" +
			"its re-alerts and its escalation stop; pings are still recorded, and its recovery is told as\n" +
			"ever. The acknowledgement ends when the check comes up. CHECK is the check's UUID, or the\n" +
			"name of its Check object (looked up with your kubeconfig, in -n's namespace). The API key of\n" +
			"the check's project, read-write, comes from $" + apiKeyEnv + "; the acknowledgement is made\n" +
			"in its name (\"API key hcw_1234abcd\"). Vigil's URL is --url or $VIGIL_URL.",
		Example: "  VIGIL_URL=https://vigil.example.com VIGIL_API_KEY=hcw_… vigil ack -n team-a nightly-backup",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := os.Getenv(apiKeyEnv)
			if key == "" {
				return fmt.Errorf("$%s is empty: set it to a read-write API key of the check's project", apiKeyEnv)
			}
			if baseURL == "" {
				baseURL = os.Getenv("VIGIL_URL")
			}
			if baseURL == "" {
				return errors.New("no Vigil URL: give --url or set $VIGIL_URL")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			uuid, isUUID := runner.CheckUUID(args[0])
			name := args[0]
			if !isUUID {
				ns, err := g.namespace(cmd, namespace)
				if err != nil {
					return err
				}
				c, err := g.client()
				if err != nil {
					return err
				}
				check := &v1.Check{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[0]}, check); err != nil {
					return err
				}
				uuid, name = checks.UUIDOf(check), ns+"/"+check.Name
			}
			ack, err := postAck(ctx, strings.TrimSuffix(baseURL, "/")+"/api/v3/checks/"+uuid+"/ack", key)
			if err != nil {
				return fmt.Errorf("check %s: %w", name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "check %s: down acknowledged by %s at %s; re-alerts and escalation stop until it recovers\n",
				name, ack.By, ack.At)
			return nil
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the Check's namespace, for a CHECK given by name (default: the kubeconfig context's, as kubectl)")
	cmd.Flags().StringVar(&baseURL, "url", "", "Vigil's URL (default $VIGIL_URL)")
	return cmd
}

// postAck asks the API to acknowledge, and returns the acknowledgement or
// the API's error in its words.
func postAck(ctx context.Context, url, key string) (ackAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return ackAnswer{}, err
	}
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("User-Agent", version.UserAgent())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ackAnswer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return ackAnswer{}, err
	}
	var out struct {
		Ack   *ackAnswer `json:"ack"`
		Error string     `json:"error"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return ackAnswer{}, fmt.Errorf("%s from %s", resp.Status, url)
	}
	switch {
	case out.Error != "":
		return ackAnswer{}, fmt.Errorf("%s (%s)", out.Error, resp.Status)
	case resp.StatusCode != http.StatusOK || out.Ack == nil:
		return ackAnswer{}, fmt.Errorf("%s from %s", resp.Status, url)
	}
	return *out.Ack, nil
}

// ackAnswer is the API's acknowledgement.
type ackAnswer struct {
	At string `json:"at"`
	By string `json:"by"`
}
