// Package scheme builds the runtime.Scheme Vigil's clients use: the built-in
// Kubernetes types and Vigil's own.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	monitoringv1alpha1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// New returns a scheme with the built-in types and Vigil's.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	// Registration of static type lists cannot fail at run time.
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(monitoringv1alpha1.AddToScheme(s))
	return s
}
