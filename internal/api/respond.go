package api

import (
	"bytes"
	"encoding/json"
	"iter"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the response failed")
		return
	}
	writeRawJSON(w, status, data)
}

// marshal is json.Marshal without escaping <, > and &: the reference sends
// them as they are, and a description full of them would be six times
// larger escaped. No answer is HTML, and every answer says it is JSON.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func writeRawJSON(w http.ResponseWriter, status int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// writeList answers 200 with a JSON list, writing each item as it is
// rendered: the whole answer is never held at once, however long the list
// and however slowly the client reads it. With key the list is the only
// value of an object ({"checks": [...]}); without, a bare array. A client
// that goes away stops the rendering.
func writeList(w http.ResponseWriter, key string, items iter.Seq[*object]) {
	writeListJSON(w, key, func(yield func([]byte) bool) {
		for o := range items {
			more := yield(o.bytes())
			o.release() // yield copied its bytes
			if !more {
				return
			}
		}
	})
}

// writeListJSON is writeList of items already rendered; an item's bytes
// are copied before the next is asked for.
func writeListJSON(w http.ResponseWriter, key string, items iter.Seq[[]byte]) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	open, end := "[", "]"
	if key != "" {
		k, _ := marshal(key)
		open, end = "{"+string(k)+":[", "]}"
	}
	// Items go out listChunk bytes at a time: one write (a system call, a
	// chunk of the response) per item made a long list mostly writes.
	buf := make([]byte, 0, listChunk+4<<10)
	buf = append(buf, open...)
	first := true
	for item := range items {
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, item...)
		if len(buf) >= listChunk {
			if _, err := w.Write(buf); err != nil {
				return
			}
			buf = buf[:0]
		}
	}
	_, _ = w.Write(append(buf, end...))
}

// listChunk is how much of a list is written at once: what a reader that
// does not read holds of it at most, besides what the kernel buffers.
const listChunk = 32 << 10

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
// the reference's clients and tests see its keys in a fixed order. Values
// are encoded as marshal encodes them.
type object struct {
	buf    bytes.Buffer
	enc    *json.Encoder // writes to buf
	n      int
	pooled bool
}

// objects are the buffers of rendered list items, used again once written.
var objects = sync.Pool{New: func() any { return &object{pooled: true} }}

// newObject is an empty object from the pool; release gives it back.
func newObject() *object { return objects.Get().(*object) }

// release gives a pooled object back once its bytes are written; a plain
// one is left to the garbage collector.
func (o *object) release() {
	if !o.pooled || o.buf.Cap() > 64<<10 {
		return
	}
	o.buf.Reset()
	o.n = 0
	objects.Put(o)
}

func (o *object) add(key string, value any) {
	if o.n == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	o.n++
	o.buf.Write(appendString(o.buf.AvailableBuffer(), key))
	o.buf.WriteByte(':')
	// The kinds every check and ping is made of are written directly:
	// through the encoder's reflection they were most of a long list's
	// cost.
	switch v := value.(type) {
	case json.RawMessage:
		o.buf.Write(v)
	case string:
		o.buf.Write(appendString(o.buf.AvailableBuffer(), v))
	case int64:
		o.buf.Write(strconv.AppendInt(o.buf.AvailableBuffer(), v, 10))
	case int:
		o.buf.Write(strconv.AppendInt(o.buf.AvailableBuffer(), int64(v), 10))
	case bool:
		o.buf.Write(strconv.AppendBool(o.buf.AvailableBuffer(), v))
	case nil:
		o.buf.WriteString("null")
	default:
		o.encode(value)
	}
}

// key starts the next member: its separator and its key, a constant of
// this package (no character of it needs escaping).
func (o *object) key(k string) {
	if o.n == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	o.n++
	o.buf.WriteByte('"')
	o.buf.WriteString(k)
	o.buf.WriteString(`":`)
}

// The typed members a check is made of, written without boxing their
// values: str joins its parts into one string.
func (o *object) str(k string, parts ...string) {
	o.key(k)
	b := append(o.buf.AvailableBuffer(), '"')
	for _, p := range parts {
		b = appendEscaped(b, p)
	}
	o.buf.Write(append(b, '"'))
}

func (o *object) num(k string, v int64) {
	o.key(k)
	o.buf.Write(strconv.AppendInt(o.buf.AvailableBuffer(), v, 10))
}

func (o *object) flag(k string, v bool) {
	o.key(k)
	o.buf.Write(strconv.AppendBool(o.buf.AvailableBuffer(), v))
}

// time is a timestamp as isoSeconds writes it, or null when !ok or zero.
func (o *object) time(k string, t time.Time, ok bool) {
	if !ok || t.IsZero() {
		o.key(k)
		o.buf.WriteString("null")
		return
	}
	o.str(k, isoSeconds(t))
}

// encode appends v's JSON, or null when v has none.
func (o *object) encode(v any) {
	if o.enc == nil {
		o.enc = json.NewEncoder(&o.buf)
		o.enc.SetEscapeHTML(false)
	}
	n := o.buf.Len()
	if err := o.enc.Encode(v); err != nil {
		o.buf.Truncate(n)
		o.buf.WriteString("null")
		return
	}
	o.buf.Truncate(o.buf.Len() - 1) // Encode's newline
}

func (o *object) bytes() []byte {
	if o.n == 0 {
		return []byte("{}")
	}
	return append(o.buf.Bytes(), '}')
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

// appendString appends s as a JSON string exactly as marshal writes it:
// without escaping <, > and &, with invalid UTF-8 as U+FFFD and U+2028 and
// U+2029 escaped (encoding/json's rules, which FuzzAppendString holds it
// to).
func appendString(b []byte, s string) []byte {
	return append(appendEscaped(append(b, '"'), s), '"')
}

// appendEscaped appends s as the inside of a JSON string (appendString's
// rules).
func appendEscaped(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}
