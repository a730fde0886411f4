// Package turns is a queue that tenants share and that serves them in
// turns: one item of each tenant that has any waiting, round and round,
// and within a tenant first in, first out. A tenant that queues a thousand
// items delays another tenant's next item by at most one of its own.
//
// Push and Pop take constant time; memory is the items waiting, and one
// word per tenant with any.
package turns

// Queue is a queue served in turns between tenants. The zero Queue is
// empty and ready to use; it is not safe for concurrent use.
type Queue[T any] struct {
	waiting map[string][]T // each tenant's items, oldest first
	order   []string       // tenants with items waiting, the next to serve first
	n       int
}

// Push queues v as tenant's newest item. A tenant with nothing waiting
// joins at the end of the turns.
func (q *Queue[T]) Push(tenant string, v T) {
	if q.waiting == nil {
		q.waiting = map[string][]T{}
	}
	items, ok := q.waiting[tenant]
	if !ok {
		q.order = append(q.order, tenant)
	}
	q.waiting[tenant] = append(items, v)
	q.n++
}

// Pop takes the oldest item of the tenant whose turn it is, and moves that
// tenant to the end of the turns if it has more.
func (q *Queue[T]) Pop() (tenant string, v T, ok bool) {
	if len(q.order) == 0 {
		return "", v, false
	}
	tenant = q.order[0]
	q.order[0] = ""
	q.order = q.order[1:]
	items := q.waiting[tenant]
	v = items[0]
	var zero T
	items[0] = zero // the queue no longer holds it
	if items = items[1:]; len(items) == 0 {
		delete(q.waiting, tenant)
	} else {
		q.waiting[tenant] = items
		q.order = append(q.order, tenant)
	}
	q.n--
	return tenant, v, true
}

// Len is how many items are waiting, of all tenants.
func (q *Queue[T]) Len() int { return q.n }
