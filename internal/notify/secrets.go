package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// SecretsIn reads Secret keys from one namespace, the Channel's own: a
// Channel can never reach another namespace's Secrets. The manager's
// dispatcher and `vigil channels test` both use it.
func SecretsIn(r client.Reader, namespace string) SecretFunc {
	return func(ctx context.Context, ref v1.SecretKeyRef) (string, error) {
		s := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, s); err != nil {
			return "", fmt.Errorf("reading Secret %q: %w", ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok || len(v) == 0 {
			return "", &KeyMissingError{Secret: ref.Name, Key: ref.Key}
		}
		return string(v), nil
	}
}

// KeyMissingError is a SecretFunc's answer for a key that its Secret does
// not hold, or holds empty: a sender told it of an optional key (an AWS
// session token) goes on without the key.
type KeyMissingError struct {
	// Secret and Key name the Secret and the key it lacks.
	Secret, Key string
}

func (e *KeyMissingError) Error() string {
	return fmt.Sprintf("secret %q has no key %q", e.Secret, e.Key)
}

// LabelChannelSecret marks a Secret that Channels may use when the manager
// runs with --channel-secrets-require-label: its value must be "true".
const LabelChannelSecret = "monitoring.vigil.dev/channel-secret"

// SecretNotAllowedError is the answer of a LabelledSecrets reader for a
// Secret without LabelChannelSecret.
type SecretNotAllowedError struct {
	// Name is the Secret's.
	Name string
}

func (e *SecretNotAllowedError) Error() string {
	return fmt.Sprintf(`Secret %q is not labelled %s: "true" (or does not exist), which this manager requires of the Secrets a Channel uses`,
		e.Name, LabelChannelSecret)
}

// LabelledSecrets reads only the Secrets labelled LabelChannelSecret
// "true"; any other Secret is a *SecretNotAllowedError, and its data never
// leaves the reader. Without it, whoever may create a Channel may send any
// Secret of the namespace to any address: the manager reads Secrets for
// Channels with its own rights, not the Channel author's. The reader reads
// Secrets only.
func LabelledSecrets(r client.Reader) client.Reader {
	return labelledSecrets{r}
}

type labelledSecrets struct{ r client.Reader }

func (l labelledSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return fmt.Errorf("reading %T %s: the Channel Secret reader reads only Secrets", obj, key)
	}
	read := &corev1.Secret{}
	err := l.r.Get(ctx, key, read, opts...)
	switch {
	case apierrors.IsNotFound(err):
		// The same answer as for an unlabelled Secret: a Channel's author
		// must not learn which Secrets exist.
		return &SecretNotAllowedError{Name: key.Name}
	case err != nil:
		return err
	}
	if read.Labels[LabelChannelSecret] != "true" {
		return &SecretNotAllowedError{Name: key.Name}
	}
	*s = *read
	return nil
}

func (l labelledSecrets) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.SecretList); !ok {
		return fmt.Errorf("listing %T: the Channel Secret reader reads only Secrets", list)
	}
	// The label selector goes last, so no option of the caller's replaces it.
	return l.r.List(ctx, list, append(opts, client.MatchingLabels{LabelChannelSecret: "true"})...)
}

// secret reads a Secret key for a sender. Surrounding white space is dropped
// (Secrets made from files often end in a newline); an empty value is an
// error, retryable because the Secret may be fixed.
func (d *Delivery) secret(ctx context.Context, ref v1.SecretKeyRef) (string, error) {
	v, err := d.Secret(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("reading Secret %q key %q: %w", ref.Name, ref.Key, err)
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("secret %q key %q is empty", ref.Name, ref.Key)
	}
	return v, nil
}

// optionalSecret reads a Secret key that a channel may do without: "" when
// the Secret does not hold it (a KeyMissingError) or holds only white
// space. Any other failure (no such Secret, one not allowed) is an error,
// as d.secret's.
func (d *Delivery) optionalSecret(ctx context.Context, ref v1.SecretKeyRef) (string, error) {
	v, err := d.Secret(ctx, ref)
	var missing *KeyMissingError
	if errors.As(err, &missing) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading Secret %q key %q: %w", ref.Name, ref.Key, err)
	}
	return strings.TrimSpace(v), nil
}

// setBearer sets "Authorization: Bearer <token>" from the Secret key ref
// names, when it names one; what names the token in an error message.
func (d *Delivery) setBearer(ctx context.Context, h http.Header, ref *v1.SecretKeyRef, what string) error {
	if ref == nil {
		return nil
	}
	token, err := d.secret(ctx, *ref)
	if err != nil {
		return err
	}
	if !validHeaderValue(token) {
		return Permanent(fmt.Errorf("%s contains control characters", what))
	}
	h.Set("Authorization", "Bearer "+token)
	return nil
}

// validHeaderValue reports whether v can be sent as an HTTP header value: no
// control characters other than tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// validHeaderName reports whether k is an HTTP header name (an RFC 9110 token).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// redactDerived adds a value derived from Secret values (an encoded
// credential) to those scrubbed from the delivery's errors.
func (d *Delivery) redactDerived(v string) {
	if d.recorder == nil || len(v) < minRedacted {
		return
	}
	d.recorder.mu.Lock()
	defer d.recorder.mu.Unlock()
	d.recorder.seen = append(d.recorder.seen, v)
}
