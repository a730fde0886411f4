package execnode_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"

	"github.com/vigil-operator/vigil/internal/devenv/execnode"
	"github.com/vigil-operator/vigil/internal/testenv"
)

var (
	cs     kubernetes.Interface
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
)

func TestExecNode(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Exec node suite")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	cluster, err := testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	// After AfterSuite, which stops the node first.
	DeferCleanup(cluster.Stop)
	cs, err = kubernetes.NewForConfig(cluster.Config)
	Expect(err).NotTo(HaveOccurred())
	dir, err = os.MkdirTemp("", "execnode")
	Expect(err).NotTo(HaveOccurred())
	// "vigil" stands for this test's stand-in program: a shell script that
	// prints its arguments, to check that programs given by name are used.
	fake := dir + "/fake-vigil"
	Expect(os.WriteFile(fake, []byte("#!/bin/sh\necho fake-vigil \"$@\"\ncp \"$0\" \"$2\"\n"), 0o755)).To(Succeed())
	node := &execnode.Node{Client: cs, Name: "exec-test", Dir: dir, Programs: map[string]string{"vigil": fake}, Log: GinkgoWriter,
		RestartBackoff: 100 * time.Millisecond}
	go func() {
		defer GinkgoRecover()
		Expect(node.Run(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	cancel()
	_ = os.RemoveAll(dir)
})
