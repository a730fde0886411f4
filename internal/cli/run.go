package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vigil-operator/vigil/internal/runner"
)

// runExit ends the process with the command's exit status; a variable so the
// command can be exercised in-process.
var runExit = os.Exit

type runOptions struct {
	url         string
	rid         string
	noStartPing bool
	noOutput    bool
	bodyLimit   int
	retry       runner.RetryPolicy
}

func newRunCmd() *cobra.Command {
	o := &runOptions{retry: runner.DefaultRetryPolicy()}
	cmd := &cobra.Command{
		Use:   "run [flags] <ping-url | uuid | ping-key/slug> -- <command> [args...]",
		Short: "Run a command and report its start, exit status and output to a check",
		Long: `Run a command and report it to a check, like runitor:

  1. ping /start?rid=<run id> (a new UUID unless --rid is given), while the
     command already starts: the monitor never delays the job;
  2. run the command with stdin, stdout and stderr passed through as they
     come, keeping the last bytes of its combined output (as many as the
     server's Ping-Body-Limit header allows, else --body-limit);
  3. pass SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 on to the
     command (to its whole process group unless stdin is a terminal);
  4. when it exits, POST that output tail to /<exit status>?rid=<run id>:
     /0 for success, /1../255 for failure, 128+n for a command killed by
     signal n, 127 for a command not found, 126 for one that cannot run;
  5. exit with the command's exit status.

The check is given as for "vigil ping". Pings are retried as there; when the
monitor is unreachable or answers errors, vigil warns on stderr and the exit
status is still the command's own.`,
		Example: `  vigil run 5b8a3f0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b -- /usr/local/bin/backup --full
  VIGIL_URL=http://vigil.vigil-system:8000 vigil run "$VIGIL_PING_KEY/nightly-backup" -- sh -c 'pg_dump db | gzip > /backup/db.gz'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 || len(args) < 2 {
				return errors.New(`usage: vigil run [flags] <check> -- <command> [args...] (the check, then "--", then the command)`)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0], args[1:])
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w (a command's own flags go after --: vigil run [flags] <check> -- <command> [args...])", err)
	})
	f := cmd.Flags()
	f.StringVar(&o.rid, "rid", "", "run id (a UUID) to send with the pings (default: a new random one)")
	f.BoolVar(&o.noStartPing, "no-start-ping", false, "do not ping /start")
	f.BoolVar(&o.noOutput, "no-output", false, "do not send the command's output (the exit-status ping has an empty body)")
	f.IntVar(&o.bodyLimit, "body-limit", runner.DefaultBodyLimit, "send at most the last N bytes of output; the server's Ping-Body-Limit replaces the default, and a smaller explicit value wins")
	addPingClientFlags(cmd, &o.url, &o.retry)
	return cmd
}

func (o *runOptions) run(cmd *cobra.Command, check string, command []string) error {
	if o.bodyLimit < 1 {
		return errors.New("--body-limit must be at least 1 (use --no-output to send no output)")
	}
	checkURL, err := pingCheckURL(check, o.url)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, runner.ForwardedSignals...)
	defer signal.Stop(sigs)
	// Without this, a closed stdout (vigil run … | head) would kill vigil
	// with SIGPIPE before it reports; the output is then only captured.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)

	stdin := cmd.InOrStdin()
	f, isFile := stdin.(*os.File)
	res, err := runner.Run(context.WithoutCancel(cmd.Context()), runner.RunConfig{
		Client:            newPingClient(o.retry, cmd.ErrOrStderr()),
		CheckURL:          checkURL,
		Command:           command,
		RunID:             o.rid,
		NoStartPing:       o.noStartPing,
		NoOutput:          o.noOutput,
		BodyLimit:         o.bodyLimit,
		BodyLimitExplicit: cmd.Flags().Changed("body-limit"),
		Stdin:             stdin,
		Stdout:            cmd.OutOrStdout(),
		Stderr:            cmd.ErrOrStderr(),
		Signals:           sigs,
		// A command reading a terminal must stay in its foreground
		// process group; otherwise a group of its own lets signals reach
		// its children too.
		NewProcessGroup: !isFile || !runner.IsTerminal(f),
	})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		signal.Stop(sigs)
		runExit(res.ExitCode)
	}
	return nil
}
