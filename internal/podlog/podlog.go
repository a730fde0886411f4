// Package podlog reads the end of a container's log through the API server,
// which asks the kubelet: what a CronJob's failed Job shows in its fail
// ping, when the CronJob allows it (internal/controller, docs/cronjobs.md).
package podlog

import (
	"context"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// Tail returns a reader of the last n bytes of a container's log, from its
// last 200 lines, that gives up after 5 s. The log's limitBytes would keep
// the first bytes of those lines, not the last: the stream is read to its
// end, keeping the end.
func Tail(cs kubernetes.Interface, n int) func(ctx context.Context, namespace, pod, container string) ([]byte, error) {
	return func(ctx context.Context, namespace, pod, container string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		lines := int64(200)
		rc, err := cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &lines}).Stream(ctx)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return lastBytes(rc, n)
	}
}

// lastBytes reads r to its end and returns its last n bytes, holding no
// more than about 2n at a time.
func lastBytes(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, 2*n)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf[:0], buf[len(buf)-n:]...)
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf[max(0, len(buf)-n):], nil
		}
		if err != nil {
			return nil, err
		}
	}
}
