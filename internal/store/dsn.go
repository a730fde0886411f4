package store

import (
	"net/url"
	"regexp"
	"strings"
)

// The forms of DSN that name a store, and how each shows in a message. A
// DSN reaches errors and the output of `vigil store migrate`, and it may
// hold a password: every form here is read the way the driver reads it
// (pgx, which follows libpq), so that what is masked is exactly what the
// driver would send as a password. A DSN in none of these forms is never
// shown, since nothing says where its password is.

// mask replaces a password in a shown DSN.
const mask = "xxxxx"

// notShown stands for a DSN in no form this package reads.
const notShown = "an unrecognised DSN (not shown)"

// dsnForm is the form of a DSN.
type dsnForm int

const (
	formUnknown dsnForm = iota
	// formSQLite is sqlite:<path>: the embedded store's file.
	formSQLite
	// formURL is libpq's URL form, postgres://user:password@host/db?...
	formURL
	// formKeywords is libpq's keyword/value form, host=db user=vigil
	// password='...'.
	formKeywords
	// formPgpass is a line of a .pgpass file,
	// host:port:database:user:password, where the password is the rest of
	// the line, colons included. It names no store (the driver does
	// not read it as a DSN); it is recognised so that a line pasted where a
	// DSN goes is refused without being shown.
	formPgpass
)

// IsDSN says whether s is a DSN in one of the forms a store is named by
// (sqlite:<path>, a postgres:// URL, libpq key=value pairs) or a .pgpass
// line, which Open refuses; anything else is, to `vigil store migrate`, the
// path of an embedded store's file.
func IsDSN(s string) bool {
	return formOf(s) != formUnknown
}

// Redact is dsn as it may be shown: any password (a URL's user:password, a
// password or sslpassword parameter in the URL or in key=value pairs, the
// last field of a .pgpass line) replaced by xxxxx, the rest as written. A
// DSN this package cannot read exactly, such as a URL with an @ its
// userinfo does not end (an unencoded @ in a password), shows only its
// scheme, and one in no form it knows is not shown at all.
func Redact(dsn string) string {
	switch formOf(dsn) {
	case formSQLite:
		return dsn
	case formURL:
		if shown, ok := redactURL(dsn); ok {
			return shown
		}
		scheme, _, _ := strings.Cut(dsn, "://")
		return "a " + scheme + ":// URL that does not parse unambiguously (not shown; percent-encode @, : and / in its user and password)"
	case formKeywords:
		if shown, ok := redactKeywords(dsn); ok {
			return shown
		}
		return "key=value pairs that do not parse (not shown; quote a value that has spaces: password='a b')"
	case formPgpass:
		return redactPgpass(dsn)
	}
	if scheme := urlScheme.FindString(dsn); scheme != "" {
		return "an unrecognised " + scheme + " DSN (not shown)"
	}
	return notShown
}

// urlScheme is the scheme of a DSN written as a URL, such as mysql://.
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// splitsExactly says whether Redact finds a PostgreSQL DSN's passwords
// exactly where the driver will: the DSN parses, and parses one way only.
func splitsExactly(dsn string) bool {
	var ok bool
	switch formOf(dsn) {
	case formURL:
		_, ok = redactURL(dsn)
	case formKeywords:
		_, ok = redactKeywords(dsn)
	}
	return ok
}

func formOf(dsn string) dsnForm {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		return formSQLite
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return formURL
	case startsWithKeyword(dsn):
		return formKeywords
	case len(pgpassFields(dsn)) >= 5:
		return formPgpass
	}
	return formUnknown
}

// secretKey says whether a parameter holds a secret: password and
// sslpassword, and, since keys are case-sensitive and an unknown one is
// sent to the server as a setting, any spelling with "pass" in it.
func secretKey(key string) bool {
	return strings.Contains(strings.ToLower(key), "pass")
}

// redactURL masks the passwords of a postgres:// URL, splitting it as pgx
// does (pgconn's parseURLSettings, after libpq): the userinfo ends at the
// first @ before any /, and its password is what follows its first colon;
// the query is &-separated key=value pairs with percent-encoded keys. It
// refuses (false) a URL whose password could be somewhere else under
// another reading: an @ after the userinfo, or a port that is not a
// number, where an unencoded / or @ in a password would put part of it.
func redactURL(dsn string) (string, bool) {
	if strings.IndexByte(dsn, 0) >= 0 {
		return "", false
	}
	scheme, rest, _ := strings.Cut(dsn, "://")
	var b strings.Builder
	b.WriteString(scheme + "://")
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		user, _, hasPassword := strings.Cut(rest[:i], ":")
		b.WriteString(user)
		if hasPassword {
			b.WriteString(":" + mask)
		}
		b.WriteByte('@')
		rest = rest[i+1:]
	}
	if strings.Contains(rest, "@") {
		return "", false
	}
	netloc, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		netloc, tail = rest[:i], rest[i:]
	}
	for _, host := range strings.Split(netloc, ",") {
		if !numericPort(host) {
			return "", false
		}
	}
	b.WriteString(netloc)
	path, query, hasQuery := strings.Cut(tail, "?")
	b.WriteString(path)
	if !hasQuery {
		return b.String(), true
	}
	b.WriteByte('?')
	for i, pair := range strings.Split(query, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		rawKey, _, hasValue := strings.Cut(pair, "=")
		// A key that does not decode could be anything: its value is
		// masked too.
		key, err := url.PathUnescape(rawKey)
		if hasValue && (err != nil || secretKey(key)) {
			b.WriteString(rawKey + "=" + mask)
			continue
		}
		b.WriteString(pair)
	}
	return b.String(), true
}

// numericPort says whether one host of a URL's host list has no port or a
// numeric one: pgx reads whatever follows the host's colon as its port.
func numericPort(host string) bool {
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return false
		}
		host = host[end+1:]
		if host == "" {
			return true
		}
		if host[0] != ':' {
			return false
		}
	}
	_, port, found := strings.Cut(host, ":")
	if !found {
		return true
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// keywordValue is one key=value pair of libpq's keyword/value form, with
// where its value's text (quotes included) is in the DSN.
type keywordValue struct {
	key        string
	start, end int
}

// libpqKeywords are the connection keywords of libpq (its
// PQconninfoOptions): a DSN whose first key is one of them is in the
// keyword/value form.
var libpqKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "channel_binding": true, "connect_timeout": true, "client_encoding": true,
	"options": true, "application_name": true, "fallback_application_name": true, "keepalives": true,
	"keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "replication": true, "gssencmode": true, "sslmode": true,
	"sslnegotiation": true, "sslcompression": true, "sslcert": true, "sslkey": true,
	"sslpassword": true, "sslcertmode": true, "sslrootcert": true, "sslcrl": true, "sslcrldir": true,
	"sslsni": true, "requirepeer": true, "require_auth": true, "ssl_min_protocol_version": true,
	"ssl_max_protocol_version": true, "krbsrvname": true, "gsslib": true, "gssdelegation": true,
	"service": true, "target_session_attrs": true, "load_balance_hosts": true,
	"min_protocol_version": true, "max_protocol_version": true,
}

// startsWithKeyword says whether s begins "<libpq keyword> =".
func startsWithKeyword(s string) bool {
	s = strings.TrimLeft(s, spaces)
	key, _, found := strings.Cut(s, "=")
	return found && libpqKeywords[strings.TrimRight(key, spaces)]
}

// spaces are the characters libpq (and pgx) take as space in key=value
// pairs.
const spaces = " \t\n\v\f\r"

// keywordValues splits a DSN in the keyword/value form into its pairs as
// pgx does (pgconn's parseKeywordValueSettings, after libpq's
// conninfo_parse): a key, =, then a value that is either quoted ('...',
// with \' and \\ inside) or runs to the next space, a backslash escaping
// the character after it. false: the DSN does not parse, and pgx would
// refuse it too.
func keywordValues(dsn string) ([]keywordValue, bool) {
	if strings.IndexByte(dsn, 0) >= 0 {
		return nil, false
	}
	var out []keywordValue
	i := skipSpaces(dsn, 0)
	for i < len(dsn) {
		eq := strings.IndexByte(dsn[i:], '=')
		if eq < 0 {
			return nil, false
		}
		key := strings.Trim(dsn[i:i+eq], spaces)
		if key == "" || strings.ContainsAny(key, spaces) {
			return nil, false
		}
		start := skipSpaces(dsn, i+eq+1)
		end := start
		switch {
		case end == len(dsn):
		case dsn[end] != '\'':
			for end < len(dsn) && !strings.ContainsRune(spaces, rune(dsn[end])) {
				if dsn[end] == '\\' {
					end++
				}
				end++
			}
			end = min(end, len(dsn))
		default:
			end++
			for end < len(dsn) && dsn[end] != '\'' {
				if dsn[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(dsn) {
				return nil, false // unterminated quoted value
			}
			end++ // the closing quote
		}
		out = append(out, keywordValue{key: key, start: start, end: end})
		i = skipSpaces(dsn, end)
	}
	return out, len(out) > 0
}

func skipSpaces(s string, i int) int {
	for i < len(s) && strings.ContainsRune(spaces, rune(s[i])) {
		i++
	}
	return i
}

// redactKeywords masks the values of the secret keys of a keyword/value
// DSN, leaving the rest as written.
func redactKeywords(dsn string) (string, bool) {
	pairs, ok := keywordValues(dsn)
	if !ok {
		return "", false
	}
	var b strings.Builder
	last := 0
	for _, p := range pairs {
		if secretKey(p.key) {
			b.WriteString(dsn[last:p.start] + mask)
			last = p.end
		}
	}
	b.WriteString(dsn[last:])
	return b.String(), true
}

// pgpassFields splits a .pgpass line at its colons; a backslash escapes a
// colon or a backslash, as libpq reads the file. It returns the offsets
// where each field starts; from the fifth on, libpq reads the rest of the
// line as the password.
func pgpassFields(line string) []int {
	if strings.ContainsAny(line, "\n\x00") {
		return nil
	}
	starts := []int{0}
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case ':':
			starts = append(starts, i+1)
		}
	}
	return starts
}

// redactPgpass keeps a .pgpass line's host, port, database and user, and
// masks the rest.
func redactPgpass(line string) string {
	return line[:pgpassFields(line)[4]] + mask
}
