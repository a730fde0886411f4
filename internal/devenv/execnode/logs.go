package execnode

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// serveLogs answers the API server's requests for container logs
// (GET /containerLogs/<namespace>/<pod>/<container>, which is what
// `kubectl logs` and Vigil's failed-Job log tail turn into) from the log
// files, on a loopback HTTPS port it returns. The API server does not
// verify a kubelet's certificate unless told to, so a self-signed one does.
func (n *Node) serveLogs(ctx context.Context) (int, error) {
	cert, err := selfSigned()
	if err != nil {
		return 0, err
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", n.containerLogs)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() { _ = srv.ServeTLS(l, "", "") }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (n *Node) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	data, err := n.readLog(ns, pod, container)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if s := r.URL.Query().Get("tailLines"); s != "" {
		if lines, err := strconv.Atoi(s); err == nil && lines >= 0 {
			data = tail(data, lines)
		}
	}
	if s := r.URL.Query().Get("limitBytes"); s != "" {
		if limit, err := strconv.Atoi(s); err == nil && limit >= 0 && limit < len(data) {
			data = data[:limit]
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(data)
}

// readLog returns the log of the newest pod of that name: a pod's
// directory carries its UID, and a Job may have made an earlier pod of the
// same name.
func (n *Node) readLog(ns, pod, container string) ([]byte, error) {
	if strings.ContainsAny(ns+pod+container, "/\\") || strings.Contains(ns+pod+container, "..") {
		return nil, errors.New("bad name")
	}
	dirs, _ := filepath.Glob(filepath.Join(n.Dir, ns+"_"+pod+"_*"))
	made := make(map[string]time.Time, len(dirs))
	for _, d := range dirs {
		made[d] = modTime(d)
	}
	sort.Slice(dirs, func(i, j int) bool { return made[dirs[i]].After(made[dirs[j]]) })
	for _, d := range dirs {
		if data, err := os.ReadFile(filepath.Join(d, container+".log")); err == nil {
			return data, nil
		}
	}
	return nil, errors.New("no log for container " + container + " of pod " + ns + "/" + pod + " on this node")
}

func modTime(path string) time.Time {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// tail returns the last n lines of data.
func tail(data []byte, n int) []byte {
	if n == 0 {
		return nil
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	for i, seen := end-1, 0; i >= 0; i-- {
		if data[i] == '\n' {
			seen++
			if seen == n {
				return data[i+1:]
			}
		}
	}
	return data
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "vigil-dev-exec"},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
