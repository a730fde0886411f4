// Package controlplane runs the two processes of a throw-away Kubernetes
// control plane, etcd and kube-apiserver, as children of the calling
// process, with a PKI of their own made on each start. It does what
// controller-runtime's envtest does to start one, and what a test suite on
// a busy machine needs beyond it:
//
//   - The processes die with the process that started them (Linux's
//     parent-death signal): a test binary killed by its timeout, a panic
//     or a Ctrl-C leaves no kube-apiserver or etcd behind.
//   - A start that fails says why: whether the process exited, with its
//     exit status, or was not ready in time, and its last lines of output.
//   - How long a start may take is the caller's to say, in one place.
//     envtest waits 5 s for the default namespace whatever its start
//     timeout, and starts again up to five times, each with a full
//     timeout, when a start fails.
//
// envtest's choices for the API server are kept (RBAC, the ServiceAccount
// admission plugin off, client certificates for users, the TokenRequest
// API), so that a test cannot tell the difference.
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options say where the binaries are and how long a start may take.
type Options struct {
	// Assets is the directory of the etcd and kube-apiserver binaries.
	Assets string
	// StartTimeout bounds the start of each process, until it answers as
	// ready; 0 means DefaultStartTimeout.
	StartTimeout time.Duration
}

// DefaultStartTimeout is long enough for a machine whose cores are all
// busy: an unloaded 2-core machine starts both processes in 3 s.
const DefaultStartTimeout = 3 * time.Minute

// stopTimeout is how long a process has to stop after SIGTERM before it
// is killed.
const stopTimeout = 30 * time.Second

// portTries is how many times a start is tried when a process finds the
// port it was given taken: ports are chosen free, and another process may
// take one before the server binds it.
const portTries = 3

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// URL is the API server's, https://127.0.0.1:port.
	URL string
	// EtcdURL is etcd's client URL, http://127.0.0.1:port (its metrics
	// are at /metrics).
	EtcdURL string
	// CA is the PEM certificate that signed the API server's serving
	// certificate and every user's client certificate.
	CA []byte

	dir       string
	pki       *pki
	etcd      *process
	apiserver *process
}

// Start starts etcd, then kube-apiserver on it, and returns once the API
// server is ready and has created the default namespace. On an error,
// everything it started is stopped again and its files removed.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	var errs []error
	for range portTries {
		cp, err := start(ctx, opts)
		if err == nil {
			return cp, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	cp = &ControlPlane{}
	if cp.dir, err = os.MkdirTemp("", "vigil-controlplane-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, cp.Stop())
			cp = nil
		}
	}()
	if cp.pki, err = newPKI(cp.dir); err != nil {
		return cp, err
	}
	cp.CA = cp.pki.caPEM

	ports, err := freePorts(ctx, 3)
	if err != nil {
		return cp, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	cp.EtcdURL = etcdURL
	cp.etcd, err = startProcess("etcd", filepath.Join(opts.Assets, "etcd"),
		"--data-dir="+filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls=http://127.0.0.1:"+strconv.Itoa(ports[1]),
		// Throw-away data: a commit need not reach the disk.
		"--unsafe-no-fsync=true",
	)
	if err != nil {
		return cp, err
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if err := cp.etcd.waitReady(ctx, opts.StartTimeout, plain, etcdURL+"/health"); err != nil {
		return cp, err
	}

	cp.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	cp.apiserver, err = startProcess("kube-apiserver", filepath.Join(opts.Assets, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+cp.dir,
		"--tls-cert-file="+cp.pki.file(servingCert),
		"--tls-private-key-file="+cp.pki.file(servingKey),
		"--client-ca-file="+cp.pki.file(caCert),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// As in envtest: no controller makes the default ServiceAccount
		// that the plugin would require of every pod.
		"--disable-admission-plugins=ServiceAccount",
		"--service-account-issuer="+cp.URL+"/",
		"--service-account-key-file="+cp.pki.file(saPublic),
		"--service-account-signing-key-file="+cp.pki.file(saKey),
	)
	if err != nil {
		return cp, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cp.CA)
	verified := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	if err := cp.apiserver.waitReady(ctx, opts.StartTimeout, verified, cp.URL+"/readyz"); err != nil {
		return cp, err
	}
	// The API server is ready before its bootstrap controller has made
	// the default namespace, which tests may take for granted.
	if err := cp.waitDefaultNamespace(ctx, opts.StartTimeout); err != nil {
		return cp, err
	}
	return cp, nil
}

// waitDefaultNamespace waits until the API server has created the default
// namespace.
func (cp *ControlPlane) waitDefaultNamespace(ctx context.Context, timeout time.Duration) error {
	cfg, err := cp.Config("controlplane-start", "system:masters")
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := c.Get(ctx, client.ObjectKey{Name: corev1.NamespaceDefault}, &corev1.Namespace{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver made no default namespace within %s: %w\n%s", timeout, err, cp.apiserver.out.Tail())
		case <-cp.apiserver.exited:
			return cp.apiserver.exitError()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Config returns a client configuration that reaches the API server as
// user, a member of groups ("system:masters" for an administrator), with
// a client certificate signed by the control plane's CA. It allows a high
// rate of requests, as envtest's do: tests are not to wait on their own
// client.
func (cp *ControlPlane) Config(user string, groups ...string) (*rest.Config, error) {
	certPEM, keyPEM, err := cp.pki.clientCert(user, groups)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            cp.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.CA, CertData: certPEM, KeyData: keyPEM},
		QPS:             1000,
		Burst:           2000,
	}, nil
}

// Stop stops kube-apiserver, then etcd, and removes their files. It may
// be called on a control plane that started only in part.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for _, p := range []*process{cp.apiserver, cp.etcd} {
		if p != nil {
			errs = append(errs, p.stop(stopTimeout))
		}
	}
	if cp.dir != "" {
		errs = append(errs, os.RemoveAll(cp.dir))
	}
	return errors.Join(errs...)
}

// errPortTaken marks a start that failed because a port it was given was
// taken in the meantime: worth trying again on others.
var errPortTaken = errors.New("a port was taken")

// freePorts returns n loopback ports that nothing listens on right now.
func freePorts(ctx context.Context, n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portTaken says whether a process's output says it could not bind.
func portTaken(output string) bool {
	return strings.Contains(output, "address already in use")
}
