//go:build unix

package runner

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// ForwardedSignals are the signals "vigil run" passes on to its command.
var ForwardedSignals = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// terminalSignals are those a terminal sends to its whole foreground process
// group: a command sharing vigil's group has received them already.
var terminalSignals = []os.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP}

// terminateSignal asks the command to stop when the run is cancelled.
var terminateSignal os.Signal = syscall.SIGTERM

func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// signalCommand sends sig to the command, or to its whole process group.
func signalCommand(p *os.Process, group bool, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !group || !ok {
		return p.Signal(sig)
	}
	err := syscall.Kill(-p.Pid, s)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// exitCode is the command's exit status as a shell reports it: 128+n for a
// command killed by signal n, capped at 255.
func exitCode(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return min(128+int(ws.Signal()), MaxExitStatus)
	}
	return clampExit(state.ExitCode())
}
