package api

import (
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"strconv"
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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	open, end := "[", "]"
	if key != "" {
		k, _ := marshal(key)
		open, end = "{"+string(k)+":[", "]}"
	}
	if _, err := io.WriteString(w, open); err != nil {
		return
	}
	sep := ""
	for o := range items {
		if _, err := io.WriteString(w, sep); err != nil {
			return
		}
		if _, err := w.Write(o.bytes()); err != nil {
			return
		}
		sep = ","
	}
	_, _ = io.WriteString(w, end)
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
// the reference's clients and tests see its keys in a fixed order. Values
// are encoded as marshal encodes them.
type object struct {
	buf bytes.Buffer
	enc *json.Encoder // writes to buf
	n   int
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

// optionalTime is a timestamp or JSON null.
func optionalTime(t time.Time, ok bool) any {
	if !ok || t.IsZero() {
		return nil
	}
	return isoSeconds(t)
}

// appendString appends s as a JSON string exactly as marshal writes it:
// without escaping <, > and &, with invalid UTF-8 as U+FFFD and U+2028 and
// U+2029 escaped (encoding/json's rules, which FuzzAppendString holds it
// to).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
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
	b = append(b, s[start:]...)
	return append(b, '"')
}
