package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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

// encodingJSON is what encoding/json writes for v, without escaping HTML.
func encodingJSON(t testing.TB, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func TestListsAreWhatEncodingJSONWouldWrite(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		items := make([]*object, 0, n)
		for i := range n {
			items = append(items, checkLike(i))
		}
		for _, key := range []string{"checks", ""} {
			var want []byte
			if key == "" {
				want = encodingJSON(t, items)
			} else {
				want = encodingJSON(t, map[string][]*object{key: items})
			}
			rec := httptest.NewRecorder()
			writeList(rec, key, slices.Values(items))
			if got := rec.Body.Bytes(); !bytes.Equal(got, want) || !json.Valid(got) {
				t.Errorf("%d items, key %q:\n got %s\nwant %s", n, key, got, want)
			}
			if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusOK || ct != "application/json" {
				t.Errorf("%d items, key %q: %d %q", n, key, rec.Code, ct)
			}
		}
	}
}

// TestNoHTMLEscaping: <, > and & are written as they are, as the reference
// writes them, and not six bytes each; what JSON must escape still is.
func TestNoHTMLEscaping(t *testing.T) {
	o := &object{}
	o.add("desc", "<b>Backups</b> & \"restores\"\n\u2028")
	o.add("tags", strings.Repeat("<", 10_000))
	want := `{"desc":"<b>Backups</b> & \"restores\"\n\u2028","tags":"` + strings.Repeat("<", 10_000) + `"}`
	if got := string(o.bytes()); got != want {
		t.Errorf("got %.200s\nwant %.200s", got, want)
	}
	rec := httptest.NewRecorder()
	writeError(rec, http.StatusBadRequest, "a <b> & c")
	if got := rec.Body.String(); got != `{"error":"a <b> & c"}` {
		t.Errorf("error: %s", got)
	}
	var back map[string]string
	if err := json.Unmarshal(o.bytes(), &back); err != nil || back["desc"] != "<b>Backups</b> & \"restores\"\n\u2028" {
		t.Errorf("does not read back: %v %q", err, back["desc"])
	}
}

// BenchmarkCheckList compares writing a list of 10,000 rendered checks one
// by one with handing them to encoding/json, as the API once did:
//
//	go test ./internal/api -run x -bench CheckList -benchmem
func BenchmarkCheckList(b *testing.B) {
	items := make([]*object, 10000)
	for i := range items {
		items[i] = checkLike(i)
	}
	b.Run("streamed", func(b *testing.B) {
		for b.Loop() {
			writeList(discard{}, "checks", slices.Values(items))
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

// discard is a ResponseWriter that drops what it is given.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// FuzzAppendString: a string is written exactly as marshal (encoding/json
// without HTML escaping) writes it, whatever its bytes.
func FuzzAppendString(f *testing.F) {
	for _, seed := range []string{"", "plain", "<b>&amp;</b>", "quote\" back\\slash", "\b\f\n\r\t\x00\x1f\x7f",
		"é ☃ 𝄞", "\u2028\u2029", "\xff\xfe broken \xc3", "a\u00a0b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// The object's direct kinds are written as marshal writes them.
func TestObjectKinds(t *testing.T) {
	o := &object{}
	o.add("s", "a<b")
	o.add("i", int64(-7))
	o.add("n", 3)
	o.add("t", true)
	o.add("null", nil)
	o.add("f", 2.5)
	o.add("raw", json.RawMessage(`[1]`))
	o.add("map", map[string]int{"x": 1})
	want := `{"s":"a<b","i":-7,"n":3,"t":true,"null":null,"f":2.5,"raw":[1],"map":{"x":1}}`
	if got := string(o.bytes()); got != want {
		t.Errorf("object = %s, want %s", got, want)
	}
}
