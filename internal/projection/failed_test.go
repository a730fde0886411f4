package projection

import (
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// TestFailedWrites: a status write lost to another writer is tried again
// without an error in the log (an operator has nothing to do about it);
// any other failure is tried again and logged as an error.
func TestFailedWrites(t *testing.T) {
	var errorLines []string
	p := &Projector{Clock: testingclock.NewFakeClock(time.Now()),
		Log: funcr.New(func(_, args string) { errorLines = append(errorLines, args) }, funcr.Options{Verbosity: 0})}
	p.init()
	key := types.NamespacedName{Namespace: "ns", Name: "nightly"}
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "monitoring.vigil.dev", Resource: "checks"}, "nightly",
		errors.New("the object has been modified"))

	p.failed("u1", &entry{key: key, urgent: true}, conflict)
	if len(errorLines) != 0 {
		t.Errorf("a conflict was logged: %q", errorLines)
	}
	if uid, e, _ := p.next(true); e == nil || uid != "u1" || !e.urgent {
		t.Errorf("the check is not queued again, urgent: %v %v", uid, e)
	}
	p.done("u1")

	p.failed("u1", &entry{key: key}, errors.New("connection refused"))
	if len(errorLines) != 1 {
		t.Errorf("another failure was not logged as an error: %q", errorLines)
	}
	if uid, e, _ := p.next(true); e == nil || uid != "u1" {
		t.Error("the check is not queued again after another failure")
	}
}
