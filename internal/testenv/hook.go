package testenv

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BeforeStatusPatch wraps c so that hook sees every object whose status is
// about to be patched through it: a test lands a competing write just
// before one, to put two writers' writes in the order it wants.
func BeforeStatusPatch(c client.Client, hook func(client.Object)) client.Client {
	return hookedClient{Client: c, hook: hook}
}

type hookedClient struct {
	client.Client
	hook func(client.Object)
}

func (c hookedClient) Status() client.SubResourceWriter {
	return hookedStatus{SubResourceWriter: c.Client.Status(), hook: c.hook}
}

type hookedStatus struct {
	client.SubResourceWriter
	hook func(client.Object)
}

func (s hookedStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.hook(obj)
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
