// Package statuspage serves the public status pages (page.go), apart from
// the signed-in dashboard: anyone with a page's address reads it. It names
// a StatusPage's address and finds a page by it. The address is derived
// from the object's UID, which only those who may read the StatusPage
// see: unguessable as a badge's, stable while the object lives, and new
// when it is created again.
package statuspage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/selection"
)

// PathPrefix is where status pages are served.
const PathPrefix = "/status/"

// Key is the page's part of its address: 128 bits of a hash of its UID,
// written as a UUID is.
func Key(uid types.UID) string {
	sum := sha256.Sum256([]byte("vigil-status-page:" + string(uid)))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// URL is the page's address under the site's base URL.
func URL(baseURL string, sp *v1.StatusPage) string {
	return baseURL + PathPrefix + Key(sp.UID)
}

// keyField indexes StatusPages by Key in the manager's cache.
const keyField = "vigil.statusPageKey"

// IndexByKey registers the cache's index of StatusPages by their key, so
// that a request finds its page without hashing every page's UID.
func IndexByKey(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &v1.StatusPage{}, keyField, func(o client.Object) []string {
		return []string{Key(o.GetUID())}
	})
}

// Find is the StatusPage with this key, nil when none has it.
func Find(ctx context.Context, r client.Reader, key string) (*v1.StatusPage, error) {
	var list v1.StatusPageList
	if err := r.List(ctx, &list, client.MatchingFields{keyField: key}); err != nil {
		return nil, fmt.Errorf("finding a status page: %w", err)
	}
	if len(list.Items) != 1 {
		return nil, nil
	}
	return &list.Items[0], nil
}

// Selection is the page's choice of checks.
func Selection(sp *v1.StatusPage) (selection.Selection, error) {
	return selection.New(sp.Spec.CheckSelection)
}

// Served reports whether the page is served: not when its controller found
// it past its namespace's limit of StatusPages.
func Served(sp *v1.StatusPage) bool {
	c := meta.FindStatusCondition(sp.Status.Conditions, v1.ConditionReady)
	return c == nil || c.Reason != v1.ReasonLimitExceeded
}
