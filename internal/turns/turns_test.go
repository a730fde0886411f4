package turns

import (
	"slices"
	"testing"
)

type push struct {
	tenant string
	v      int
}

func TestTurns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pushes []push
		want   []int
	}{
		{name: "empty"},
		{name: "one tenant keeps its order", pushes: []push{{"a", 1}, {"a", 2}, {"a", 3}}, want: []int{1, 2, 3}},
		{
			name:   "a crowd and a single item: the single item comes second",
			pushes: []push{{"a", 1}, {"a", 2}, {"a", 3}, {"a", 4}, {"b", 10}},
			want:   []int{1, 10, 2, 3, 4},
		},
		{
			name:   "tenants in the order they first queued, round and round",
			pushes: []push{{"b", 10}, {"a", 1}, {"b", 11}, {"c", 20}, {"a", 2}, {"b", 12}},
			want:   []int{10, 1, 20, 11, 2, 12},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q Queue[int]
			for _, p := range tc.pushes {
				q.Push(p.tenant, p.v)
			}
			if q.Len() != len(tc.pushes) {
				t.Errorf("Len = %d, want %d", q.Len(), len(tc.pushes))
			}
			var got []int
			for {
				_, v, ok := q.Pop()
				if !ok {
					break
				}
				got = append(got, v)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("served %v, want %v", got, tc.want)
			}
			if q.Len() != 0 {
				t.Errorf("Len after draining = %d", q.Len())
			}
		})
	}
}

// A tenant that comes back after it drained joins at the end of the
// turns, behind those still waiting.
func TestDrainedTenantRejoinsAtTheEnd(t *testing.T) {
	var q Queue[string]
	q.Push("a", "a1")
	q.Push("b", "b1")
	q.Push("b", "b2")
	if tenant, v, _ := q.Pop(); tenant != "a" || v != "a1" {
		t.Fatalf("first: %s %s", tenant, v)
	}
	q.Push("a", "a2")
	var got []string
	for _, v, ok := q.Pop(); ok; _, v, ok = q.Pop() {
		got = append(got, v)
	}
	if want := []string{"b1", "a2", "b2"}; !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}

// FuzzTurns checks the queue against its definition, worked out slowly:
// every item served once, each tenant's in order, and no tenant served
// twice while another one that was waiting all along is not.
func FuzzTurns(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 255, 2, 255, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var q Queue[int]
		pushed := map[string][]int{} // each tenant's items not yet served
		// servedWhile[y] are the tenants served since y last was, or
		// began to wait.
		servedWhile := map[string]map[string]bool{}
		for i, op := range ops {
			if op == 255 {
				tenant, v, ok := q.Pop()
				if !ok {
					for tn, items := range pushed {
						if len(items) > 0 {
							t.Fatalf("empty, but %s has %v", tn, items)
						}
					}
					continue
				}
				if len(pushed[tenant]) == 0 || pushed[tenant][0] != v {
					t.Fatalf("served %s's %d, waiting %v", tenant, v, pushed[tenant])
				}
				pushed[tenant] = pushed[tenant][1:]
				for tn, items := range pushed {
					if tn == tenant || len(items) == 0 {
						continue
					}
					if servedWhile[tn][tenant] {
						t.Fatalf("%s served twice while %s waited", tenant, tn)
					}
					servedWhile[tn][tenant] = true
				}
				servedWhile[tenant] = map[string]bool{}
				continue
			}
			tenant := string(rune('a' + op%4))
			if len(pushed[tenant]) == 0 {
				servedWhile[tenant] = map[string]bool{}
			}
			q.Push(tenant, i)
			pushed[tenant] = append(pushed[tenant], i)
		}
		n := 0
		for _, items := range pushed {
			n += len(items)
		}
		if q.Len() != n {
			t.Fatalf("Len = %d, want %d", q.Len(), n)
		}
	})
}
