//go:build !unix

package runner

import (
	"os"
	"os/exec"
)

// ForwardedSignals are the signals "vigil run" passes on to its command.
var ForwardedSignals = []os.Signal{os.Interrupt}

var terminalSignals []os.Signal

var terminateSignal = os.Kill

func setProcessGroup(*exec.Cmd) {}

func signalCommand(p *os.Process, _ bool, sig os.Signal) error {
	if sig != os.Kill {
		// Only Kill can be delivered to another process here.
		return nil
	}
	return p.Signal(sig)
}

func exitCode(state *os.ProcessState) int { return clampExit(state.ExitCode()) }
