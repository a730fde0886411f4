package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// checkLike is an object of about a rendered check's size and mix.
func checkLike(i int) *object {
	o := &object{}
	o.add("name", fmt.Sprintf("Backup <%d> & \"friends\" é", i))
	o.add("slug", fmt.Sprintf("backup-%d", i))
	o.add("tags", "prod db")
	o.add("desc", "line one\nline two\t\u2028")
	o.add("grace", 3600)
	o.add("n_pings", int64(i))
	o.add("status", "up")
	o.add("started", false)
	o.add("last_ping", isoSeconds(time.Date(2026, 11, 23, 10, 0, i%60, 0, time.UTC)))
	o.add("next_ping", nil)
	o.add("manual_resume", false)
	o.add("methods", "")
	o.add("subject", "")
	o.add("ping_url", "https://vigil.example.com/ping/5f5e2a43-52b3-4c1e-9d0b-1a2b3c4d5e6f")
	o.add("update_url", "https://vigil.example.com/api/v3/checks/5f5e2a43-52b3-4c1e-9d0b-1a2b3c4d5e6f")
	o.add("channels", "1b3c,2d4e")
	o.add("timeout", 86400)
	return o
}

func TestListsAreWhatEncodingJSONWouldWrite(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		items := make([]*object, 0, n)
		for i := range n {
			items = append(items, checkLike(i))
		}
		want, err := json.Marshal(map[string][]*object{"checks": items})
		if err != nil {
			t.Fatal(err)
		}
		resp := &object{}
		resp.add("checks", items)
		if got := resp.bytes(); !bytes.Equal(got, want) {
			t.Errorf("%d checks:\n got %s\nwant %s", n, got, want)
		}
		wantArray, _ := json.Marshal(items)
		if got := arrayBytes(items); !bytes.Equal(got, wantArray) {
			t.Errorf("%d checks as an array:\n got %s\nwant %s", n, got, wantArray)
		}
		if !json.Valid(resp.bytes()) {
			t.Errorf("%d checks: invalid JSON", n)
		}
	}
}

// BenchmarkCheckList compares writing a list of 10,000 rendered checks as
// they are with handing them to encoding/json, as the API once did:
//
//	go test ./internal/api -run x -bench CheckList -benchmem
func BenchmarkCheckList(b *testing.B) {
	items := make([]*object, 10000)
	for i := range items {
		items[i] = checkLike(i)
	}
	b.Run("as-is", func(b *testing.B) {
		for b.Loop() {
			resp := &object{}
			resp.add("checks", items)
			_ = resp.bytes()
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(map[string][]*object{"checks": items}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
