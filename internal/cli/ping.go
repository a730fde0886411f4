package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigil-operator/vigil/internal/runner"
	"github.com/vigil-operator/vigil/internal/version"
)

// pingBodyFileMax bounds a body read with --body-file.
const pingBodyFileMax = 10 << 20

type pingOptions struct {
	url              string
	start, fail, log bool
	exitCode         int
	rid              string
	body, bodyFile   string
	method           string
	retry            runner.RetryPolicy
}

func newPingCmd() *cobra.Command {
	o := &pingOptions{retry: runner.DefaultRetryPolicy()}
	cmd := &cobra.Command{
		Use:   "ping [flags] <ping-url | uuid | ping-key/slug>",
		Short: "Send one ping to a check (success, start, fail, log or an exit status)",
		Long: `Send one ping to a check and exit 0 once the server acknowledged it.

The check is a full ping URL, used as is, or a check UUID or <ping-key>/<slug>,
appended to $VIGIL_URL/ping/ (--url overrides $VIGIL_URL). --start, --fail,
--log or --exit-code add the suffix; --rid links a start to its end.

A ping with a body is a POST, one without a GET (see --method). Network errors,
408, 429 and 5xx answers are retried with exponential backoff and jitter,
honouring Retry-After; other answers (404 not found, 400 invalid url format, …)
are final. The command fails with the reason when the ping was not acknowledged.`,
		Example: `  vigil ping 5b8a3f0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b
  vigil ping --start --rid "$RID" "$VIGIL_PING_KEY/nightly-backup"
  vigil ping --exit-code 3 --body-file /var/log/backup.log https://vigil.example.com/ping/5b8a3f0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b
  make 2>&1 | tail -c 10000 | vigil ping --fail --body-file - "$CHECK"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0])
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.start, "start", false, "signal that the job started (/start)")
	f.BoolVar(&o.fail, "fail", false, "signal a failure (/fail)")
	f.BoolVar(&o.log, "log", false, "record a log entry without changing the check's state (/log)")
	f.IntVar(&o.exitCode, "exit-code", 0, "report an exit status (/<n>, 0..255): 0 is a success, others a failure")
	f.StringVar(&o.rid, "rid", "", "run id (a UUID) linking a start ping to the ping that ends the run")
	f.StringVar(&o.body, "body", "", "send `TEXT` as the ping body")
	f.StringVar(&o.bodyFile, "body-file", "", "send the content of `FILE` as the ping body (- reads stdin)")
	f.StringVarP(&o.method, "method", "X", "", "HTTP method (default POST with a body, else GET)")
	addPingClientFlags(cmd, &o.url, &o.retry)
	cmd.MarkFlagsMutuallyExclusive("start", "fail", "log", "exit-code")
	cmd.MarkFlagsMutuallyExclusive("body", "body-file")
	return cmd
}

func (o *pingOptions) run(cmd *cobra.Command, check string) error {
	kind := runner.Success
	switch {
	case o.start:
		kind = runner.Start
	case o.fail:
		kind = runner.Fail
	case o.log:
		kind = runner.Log
	case cmd.Flags().Changed("exit-code"):
		k, err := runner.ExitStatus(o.exitCode)
		if err != nil {
			return fmt.Errorf("--exit-code: %w", err)
		}
		kind = k
	}
	checkURL, err := pingCheckURL(check, o.url)
	if err != nil {
		return err
	}
	u, err := runner.PingURL(checkURL, kind, o.rid)
	if err != nil {
		return err
	}
	req := runner.Request{URL: u, Method: strings.ToUpper(o.method)}
	switch {
	case cmd.Flags().Changed("body"):
		req.Body = []byte(o.body)
	case o.bodyFile != "":
		if req.Body, err = readPingBody(cmd, o.bodyFile); err != nil {
			return err
		}
	}
	resp, err := newPingClient(o.retry, cmd.ErrOrStderr()).Ping(cmd.Context(), req)
	if err != nil {
		return fmt.Errorf("ping not acknowledged: %w", err)
	}
	if strings.HasPrefix(resp.Body, "OK (") {
		// hc-ping.com answers 200 "OK (not found)" and "OK (rate-limited)".
		fmt.Fprintf(cmd.ErrOrStderr(), "vigil: warning: the server answered %q\n", resp.Body)
	}
	return nil
}

func readPingBody(cmd *cobra.Command, name string) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = cmd.InOrStdin()
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--body-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, pingBodyFileMax+1))
	if err != nil {
		return nil, fmt.Errorf("--body-file: %w", err)
	}
	if len(b) > pingBodyFileMax {
		return nil, errors.New("--body-file: the body is larger than 10 MiB; the server keeps only its start anyway (Ping-Body-Limit), so send less, e.g. through tail -c")
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// addPingClientFlags adds the flags "vigil ping" and "vigil run" share: the
// server URL and the retry policy.
func addPingClientFlags(cmd *cobra.Command, baseURL *string, p *runner.RetryPolicy) {
	f := cmd.Flags()
	f.StringVar(baseURL, "url", "", "Vigil's URL, for a check given as a UUID or ping-key/slug (default $VIGIL_URL)")
	f.IntVar(&p.Attempts, "attempts", p.Attempts, "tries per ping, the first included")
	f.DurationVar(&p.AttemptTimeout, "timeout", p.AttemptTimeout, "time limit of each try")
	f.DurationVar(&p.InitialBackoff, "backoff", p.InitialBackoff, "wait before the first retry, doubling for each further one (jittered; a longer Retry-After wins)")
	f.DurationVar(&p.MaxElapsed, "max-time", p.MaxElapsed, "time limit of a ping, all tries and waits included (0: no limit)")
}

// pingCheckURL resolves a check argument against --url or $VIGIL_URL.
func pingCheckURL(check, baseURL string) (string, error) {
	if baseURL == "" {
		baseURL = os.Getenv("VIGIL_URL")
	}
	return runner.ResolveURL(check, baseURL)
}

func newPingClient(p runner.RetryPolicy, log io.Writer) *runner.Client {
	return &runner.Client{Retry: p, UserAgent: version.UserAgent(), Log: log}
}
