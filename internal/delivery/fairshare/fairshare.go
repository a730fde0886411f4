// Package fairshare decides which due notifications start when delivery
// workers are free, so that one namespace cannot crowd out another: no
// namespace holds more than its share of the workers, no channel more than
// its limit, and namespaces take turns, the one with the fewest deliveries
// in flight first. A namespace with hundreds of due notifications and one
// with a single alert then each get a worker, whichever came first.
//
// It is pure: counts in, choices out.
package fairshare

import "sort"

// Job is a due delivery as the scheduler sees it: whose it is and where it
// goes.
type Job struct {
	Namespace, Channel string
}

// Limits bound what one namespace and one channel may have in flight; zero
// or less means no bound.
type Limits struct {
	PerNamespace int
	PerChannel   int
}

// Load counts the deliveries in flight, by namespace and by channel. The
// zero Load is empty and ready to use.
type Load struct {
	namespaces map[string]int
	channels   map[Job]int
}

// Add counts a delivery that started.
func (l *Load) Add(j Job) {
	if l.namespaces == nil {
		l.namespaces, l.channels = map[string]int{}, map[Job]int{}
	}
	l.namespaces[j.Namespace]++
	l.channels[j]++
}

// Done counts a delivery that finished.
func (l *Load) Done(j Job) {
	if l.namespaces[j.Namespace]--; l.namespaces[j.Namespace] <= 0 {
		delete(l.namespaces, j.Namespace)
	}
	if l.channels[j]--; l.channels[j] <= 0 {
		delete(l.channels, j)
	}
}

// Namespace is how many deliveries of a namespace are in flight.
func (l *Load) Namespace(ns string) int { return l.namespaces[ns] }

// Channel is how many deliveries to a channel are in flight.
func (l *Load) Channel(j Job) int { return l.channels[j] }

// Full lists the namespaces and channels at their limit: asking for due
// deliveries of those is pointless until one of theirs finishes.
func (l *Load) Full(lim Limits) (namespaces []string, channels []Job) {
	for ns, n := range l.namespaces {
		if atLimit(n, lim.PerNamespace) {
			namespaces = append(namespaces, ns)
		}
	}
	for ch, n := range l.channels {
		if atLimit(n, lim.PerChannel) {
			channels = append(channels, ch)
		}
	}
	sort.Strings(namespaces)
	sort.Slice(channels, func(i, k int) bool { return less(channels[i], channels[k]) })
	return namespaces, channels
}

func atLimit(n, limit int) bool { return limit > 0 && n >= limit }

func less(a, b Job) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Channel < b.Channel
}

// Pick chooses which of the due jobs to start with free workers, given
// what is in flight: at most free of them, none that would take its
// namespace or channel past its limit. Each worker goes to the namespace
// with the fewest deliveries in flight (counting those picked so far);
// among equals, to the first after the namespace that got the previous one
// (after; "" for none), in name order, round and round. Within a namespace
// jobs start in the order given (the store's: earliest first). It returns
// the indexes of the picked jobs, in the order picked; the last one's
// namespace is the next call's after.
func Pick(due []Job, free int, load *Load, lim Limits, after string) []int {
	queues := map[string][]int{}
	var names []string
	for i, j := range due {
		if _, ok := queues[j.Namespace]; !ok {
			names = append(names, j.Namespace)
		}
		queues[j.Namespace] = append(queues[j.Namespace], i)
	}
	sort.Strings(names)
	picked := []int{}
	inNamespace := map[string]int{}
	inChannel := map[Job]int{}
	for len(picked) < free {
		// Namespaces in turn order: the first after the last served.
		first := sort.SearchStrings(names, after)
		if first < len(names) && names[first] == after {
			first++
		}
		best, bestLoad, found := "", 0, false
		for k := range names {
			ns := names[(first+k)%len(names)]
			n := load.Namespace(ns) + inNamespace[ns]
			if atLimit(n, lim.PerNamespace) || (found && n >= bestLoad) {
				continue
			}
			// Jobs to a channel at its limit wait; it stays there for the
			// rest of this call, as counts here only grow.
			q := queues[ns]
			for len(q) > 0 && atLimit(load.Channel(due[q[0]])+inChannel[due[q[0]]], lim.PerChannel) {
				q = q[1:]
			}
			queues[ns] = q
			if len(q) > 0 {
				best, bestLoad, found = ns, n, true
			}
		}
		if !found {
			break
		}
		i := queues[best][0]
		queues[best] = queues[best][1:]
		picked = append(picked, i)
		inNamespace[best]++
		inChannel[due[i]]++
		after = best
	}
	return picked
}
