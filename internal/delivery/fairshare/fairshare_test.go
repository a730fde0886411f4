package fairshare

import (
	"fmt"
	"slices"
	"testing"
)

// jobs makes due jobs from "namespace/channel" strings.
func jobs(specs ...string) []Job {
	var out []Job
	for _, s := range specs {
		var j Job
		for i := range s {
			if s[i] == '/' {
				j = Job{Namespace: s[:i], Channel: s[i+1:]}
			}
		}
		out = append(out, j)
	}
	return out
}

func repeat(spec string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = spec
	}
	return out
}

func loaded(specs ...string) *Load {
	l := &Load{}
	for _, j := range jobs(specs...) {
		l.Add(j)
	}
	return l
}

func TestPick(t *testing.T) {
	for _, tc := range []struct {
		name  string
		due   []Job
		free  int
		load  *Load
		lim   Limits
		after string
		want  []int
	}{{
		name: "a backlog and a single alert each get a worker",
		due:  jobs(append(repeat("a/hook", 10), "b/pager")...),
		free: 2, load: &Load{}, lim: Limits{PerNamespace: 4, PerChannel: 4},
		want: []int{0, 10},
	}, {
		name: "a namespace alone takes no more than its share",
		due:  jobs(append(repeat("a/hook", 5), repeat("a/mail", 5)...)...),
		free: 8, load: &Load{}, lim: Limits{PerNamespace: 4},
		want: []int{0, 1, 2, 3},
	}, {
		name: "what is in flight counts toward the share, and the emptier namespace goes first",
		due:  jobs(append(repeat("a/hook", 5), "b/pager")...),
		free: 8, load: loaded("a/hook", "a/mail", "a/mail"), lim: Limits{PerNamespace: 4},
		want: []int{5, 0},
	}, {
		name: "the namespace with the fewest in flight first",
		due:  jobs("a/x", "b/x", "c/x"),
		free: 1, load: loaded("a/x", "a/x", "c/x"), lim: Limits{PerNamespace: 4},
		want: []int{1},
	}, {
		name: "among equals, the first after the one served last",
		due:  jobs("a/x", "b/x", "c/x"),
		free: 1, load: &Load{}, after: "a",
		want: []int{1},
	}, {
		name: "among equals, round and round past the last name",
		due:  jobs("a/x", "b/x", "c/x"),
		free: 1, load: &Load{}, after: "c",
		want: []int{0},
	}, {
		name: "among equals, after a namespace with nothing due",
		due:  jobs("a/x", "b/x", "c/x"),
		free: 1, load: &Load{}, after: "bb",
		want: []int{2},
	}, {
		name: "namespaces alternate while workers last",
		due:  jobs("a/x", "a/x", "a/x", "b/y", "b/y", "b/y"),
		free: 4, load: &Load{},
		want: []int{0, 3, 1, 4},
	}, {
		name: "a channel at its limit waits; the namespace's next channel goes",
		due:  jobs("a/x", "a/x", "a/x", "a/y"),
		free: 4, load: &Load{}, lim: Limits{PerChannel: 2},
		want: []int{0, 1, 3},
	}, {
		name: "a channel full with what is in flight",
		due:  jobs("a/x", "b/y"),
		free: 4, load: loaded(repeat("a/x", 4)...), lim: Limits{PerChannel: 4},
		want: []int{1},
	}, {
		name: "a channel of the same name in another namespace is another channel",
		due:  jobs("a/x", "b/x"),
		free: 4, load: loaded(repeat("b/x", 2)...), lim: Limits{PerChannel: 2},
		want: []int{0},
	}, {
		name: "every namespace at its share",
		due:  jobs("a/x", "b/y"),
		free: 4, load: loaded("a/x", "a/z", "b/q", "b/r"), lim: Limits{PerNamespace: 2},
		want: []int{},
	}, {
		name: "no free worker",
		due:  jobs("a/x"),
		free: 0, load: &Load{},
		want: []int{},
	}, {
		name: "nothing due",
		free: 3, load: &Load{},
		want: []int{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Pick(tc.due, tc.free, tc.load, tc.lim, tc.after); !slices.Equal(got, tc.want) {
				t.Errorf("Pick = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	l := &Load{}
	for _, j := range jobs("a/x", "a/x", "a/y", "b/x") {
		l.Add(j)
	}
	ns, ch := l.Full(Limits{PerNamespace: 3, PerChannel: 2})
	if !slices.Equal(ns, []string{"a"}) || !slices.Equal(ch, jobs("a/x")) {
		t.Errorf("full: %v %v", ns, ch)
	}
	for _, j := range jobs("a/x", "a/y", "b/x") {
		l.Done(j)
	}
	if l.Namespace("a") != 1 || l.Channel(Job{"a", "x"}) != 1 || l.Namespace("b") != 0 || len(l.namespaces) != 1 || len(l.channels) != 1 {
		t.Errorf("after three finished: %+v", l)
	}
	if ns, ch := l.Full(Limits{}); len(ns)+len(ch) != 0 {
		t.Errorf("full without limits: %v %v", ns, ch)
	}
}

// FuzzPick: whatever is due and in flight, Pick starts no more than the
// free workers, keeps every limit it did not find exceeded, leaves a worker
// idle only when everything left waits on a limit, and keeps each
// namespace's order.
func FuzzPick(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0, 1, 3}, []byte{0, 0, 1}, uint8(3), uint8(2), uint8(2), uint8(0))
	f.Add([]byte{5, 5, 5, 5, 17}, []byte{}, uint8(8), uint8(4), uint8(4), uint8(1))
	f.Fuzz(func(t *testing.T, dueSpec, loadSpec []byte, free, perNS, perCh, after uint8) {
		job := func(b byte) Job { return Job{Namespace: fmt.Sprint("ns", b%4), Channel: fmt.Sprint("ch", b/4%3)} }
		var due []Job
		for _, b := range dueSpec {
			due = append(due, job(b))
		}
		load := &Load{}
		for _, b := range loadSpec {
			load.Add(job(b))
		}
		lim := Limits{PerNamespace: int(perNS % 6), PerChannel: int(perCh % 6)}
		n := int(free % 12)
		picked := Pick(due, n, load, lim, fmt.Sprint("ns", after%5))

		if len(picked) > n {
			t.Fatalf("picked %d with %d free", len(picked), n)
		}
		seen := map[int]bool{}
		last := map[string]int{}
		after2 := &Load{}
		for j, c := range load.channels {
			for range c {
				after2.Add(j)
			}
		}
		for _, i := range picked {
			if i < 0 || i >= len(due) || seen[i] {
				t.Fatalf("picked %v of %d", picked, len(due))
			}
			seen[i] = true
			j := due[i]
			if prev, ok := last[j.Namespace]; ok && prev > i {
				t.Fatalf("%v: a namespace's jobs out of order", picked)
			}
			last[j.Namespace] = i
			if atLimit(after2.Namespace(j.Namespace), lim.PerNamespace) || atLimit(after2.Channel(j), lim.PerChannel) {
				t.Fatalf("picked %v past a limit %+v", j, lim)
			}
			after2.Add(j)
		}
		if len(picked) < n {
			for i, j := range due {
				if !seen[i] && !atLimit(after2.Namespace(j.Namespace), lim.PerNamespace) && !atLimit(after2.Channel(j), lim.PerChannel) {
					t.Fatalf("job %d (%v) could start, %d of %d workers idle", i, j, n-len(picked), n)
				}
			}
		}
	})
}
