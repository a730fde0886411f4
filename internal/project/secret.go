package project

import (
	"context"
	"fmt"
	"sort"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateAPIKey adds a new API key to the namespace's project Secret (creating
// the Secret, with a ping key, badge key and signing secret, if it does not
// exist) and returns the key. Only its hash is stored: the key cannot be
// shown again.
func CreateAPIKey(ctx context.Context, c client.Client, namespace string, access Access) (string, error) {
	key, stored, err := NewAPIKey(access)
	if err != nil {
		return "", err
	}
	field := DataReadWriteKeys
	if access == ReadOnly {
		field = DataReadOnlyKeys
	}
	err = updateSecret(ctx, c, namespace, func(s *corev1.Secret) {
		s.Data[field] = AppendKey(s.Data[field], stored)
	})
	return key, err
}

// EnsureProjectSecret makes sure the namespace's project Secret exists and
// has a ping key, badge key and signing secret, and returns its data.
func EnsureProjectSecret(ctx context.Context, c client.Client, namespace string) (map[string][]byte, error) {
	var data map[string][]byte
	err := updateSecret(ctx, c, namespace, func(s *corev1.Secret) { data = s.Data })
	return data, err
}

// updateSecret reads the project Secret (or starts a new one), fills in the
// generated secrets it lacks, applies mutate and writes it back, retrying on
// conflicts so that concurrent `vigil keys create` runs both land.
func updateSecret(ctx context.Context, c client.Client, namespace string, mutate func(*corev1.Secret)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: DefaultSecretName}, s)
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return fmt.Errorf("reading Secret %s/%s: %w", namespace, DefaultSecretName, err)
		}
		if create {
			s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: DefaultSecretName}, Type: corev1.SecretTypeOpaque}
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[SecretLabel] = "true"
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		if err := fillGenerated(s.Data); err != nil {
			return err
		}
		mutate(s)
		if create {
			return c.Create(ctx, s)
		}
		return c.Update(ctx, s)
	})
}

func fillGenerated(data map[string][]byte) error {
	if len(data[DataPingKey]) == 0 {
		k, err := NewPingKey()
		if err != nil {
			return err
		}
		data[DataPingKey] = []byte(k)
	}
	if len(data[DataBadgeKey]) == 0 {
		data[DataBadgeKey] = []byte(uuid.NewString())
	}
	if len(data[DataSigningSecret]) == 0 {
		s, err := randomToken(40)
		if err != nil {
			return err
		}
		data[DataSigningSecret] = []byte(s)
	}
	return nil
}

// KeyInfo describes one stored API key without revealing it.
type KeyInfo struct {
	Secret string
	Access Access
	Label  string
	Hashed bool
}

// ListKeys lists the API keys of every project Secret in the namespace.
func ListKeys(ctx context.Context, c client.Client, namespace string) ([]KeyInfo, error) {
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(namespace), client.MatchingLabels{SecretLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing project Secrets in %s: %w", namespace, err)
	}
	var out []KeyInfo
	for _, s := range secrets.Items {
		keys := KeysFromSecretData(s.Data)
		for _, k := range keys.ReadWrite {
			out = append(out, KeyInfo{Secret: s.Name, Access: ReadWrite, Label: k.Label, Hashed: k.Hashed})
		}
		for _, k := range keys.ReadOnly {
			out = append(out, KeyInfo{Secret: s.Name, Access: ReadOnly, Label: k.Label, Hashed: k.Hashed})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Secret < out[j].Secret })
	return out, nil
}
