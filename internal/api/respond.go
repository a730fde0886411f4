package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the response failed")
		return
	}
	writeRawJSON(w, status, data)
}

func writeRawJSON(w http.ResponseWriter, status int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// writeError answers {"error": msg}: every API error is JSON.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text))
}

// object builds a JSON object whose keys keep the order they are added in:
// the reference's clients and tests see its keys in a fixed order.
type object struct {
	buf bytes.Buffer
	n   int
}

func (o *object) add(key string, value any) {
	if o.n == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	o.n++
	k, _ := json.Marshal(key)
	o.buf.Write(k)
	o.buf.WriteByte(':')
	switch v := value.(type) {
	case json.RawMessage:
		o.buf.Write(v)
	case []*object:
		writeArray(&o.buf, v)
	default:
		data, err := json.Marshal(v)
		if err != nil {
			data = []byte("null")
		}
		o.buf.Write(data)
	}
}

func (o *object) bytes() []byte {
	if o.n == 0 {
		return []byte("{}")
	}
	return append(o.buf.Bytes(), '}')
}

// writeArray writes objects as a JSON array. Each object is compact JSON
// already: handing them to encoding/json would only have it check and copy
// every byte again, a third of the time a list of 10,000 checks takes.
func writeArray(b *bytes.Buffer, items []*object) {
	size := 2 + len(items)
	for _, it := range items {
		size += it.buf.Len() + 2
	}
	b.Grow(size)
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it.bytes())
	}
	b.WriteByte(']')
}

// arrayBytes is items as a JSON array.
func arrayBytes(items []*object) []byte {
	var b bytes.Buffer
	writeArray(&b, items)
	return b.Bytes()
}

// MarshalJSON makes an object embeddable in other JSON values.
func (o *object) MarshalJSON() ([]byte, error) { return o.bytes(), nil }

// isoSeconds formats a time as the reference does for check fields and flips:
// UTC, microseconds dropped, "+00:00".
func isoSeconds(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05") + "+00:00"
}

// isoMicro formats a ping date as Python's isoformat does: microseconds when
// non-zero, none at all otherwise.
func isoMicro(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05") + "+00:00"
	}
	return t.Format("2006-01-02T15:04:05.000000") + "+00:00"
}

// optionalTime is a timestamp or JSON null.
func optionalTime(t time.Time, ok bool) any {
	if !ok || t.IsZero() {
		return nil
	}
	return isoSeconds(t)
}
