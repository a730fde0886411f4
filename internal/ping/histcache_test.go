package ping

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func histWithBody(n int) *v1.CheckHistory {
	return &v1.CheckHistory{Pings: []v1.PingRecord{{N: 1, Body: make([]byte, n)}}}
}

func TestHistCacheEvictsLeastRecentlyUsedBeyondBudget(t *testing.T) {
	one := historySize(histWithBody(1000))
	c := newHistCache(3 * one)
	for i := range 3 {
		c.put(types.UID(fmt.Sprint(i)), histWithBody(1000))
	}
	// Using 0 makes 1 the least recently used.
	if c.get("0") == nil {
		t.Fatal("0 was evicted within the budget")
	}
	c.put("3", histWithBody(1000))
	if c.get("1") != nil {
		t.Error("1, the least recently used, was kept beyond the budget")
	}
	for _, uid := range []types.UID{"0", "2", "3"} {
		if c.get(uid) == nil {
			t.Errorf("%s was evicted, want it kept", uid)
		}
	}
	if c.used != 3*one {
		t.Errorf("used = %d, want %d", c.used, 3*one)
	}
}

func TestHistCacheReplaceForgetAndOversized(t *testing.T) {
	c := newHistCache(historySize(histWithBody(100)) * 2)
	first, second := histWithBody(10), histWithBody(20)
	c.put("a", first)
	c.put("a", second)
	if got := c.get("a"); got != second {
		t.Errorf("get after replace = %p, want the second history %p", got, second)
	}
	if c.used != historySize(second) {
		t.Errorf("used = %d after replace, want %d", c.used, historySize(second))
	}
	c.put("a", nil)
	if c.get("a") != nil || c.used != 0 {
		t.Errorf("put(nil) kept the history (used %d)", c.used)
	}
	c.put("big", histWithBody(10_000))
	if c.get("big") != nil || c.used != 0 {
		t.Error("a history larger than the whole budget was cached")
	}
}
