package badge

import "strings"

// UnnamedLabel labels the badge of a check that has nothing else to show.
const UnnamedLabel = "check"

// CheckLabel returns the label of a single-check badge: the first of the
// check's name, its slug and its object name that is not empty and reveals
// nothing of a UUID (see revealsUUID), else [UnnamedLabel]. The object name
// loses the "-<8 hex digits of the UUID>" that names of checks created
// through the API or by a ping end in, so an unnamed API check is "check".
//
// The reference labels an unnamed check with its UUID. The UUID is the
// check's ping credential and a badge is public (and read-only keys see
// badge URLs), so a Vigil badge never shows it, nor any part of it.
func CheckLabel(name, slug, object, uuid string) string {
	digits := hexDigits(uuid)
	if len(digits) >= 8 {
		object = strings.TrimSuffix(object, "-"+digits[:8])
	}
	for _, label := range []string{name, slug, object} {
		if label != "" && !revealsUUID(label, digits) {
			return label
		}
	}
	return UnnamedLabel
}

// revealsUUID reports whether a label holds something that helps guess a
// ping URL: 8 consecutive hex digits (32 bits) of the check's own UUID, or
// a run of 32 hex digits, the shape of any UUID. Case and hyphens are
// ignored, so "8FF500E1-..." and "8ff500e1..." count alike.
func revealsUUID(label, uuidDigits string) bool {
	flat := hexDigitsOrGaps(label)
	for i := 0; i+8 <= len(uuidDigits); i++ {
		if strings.Contains(flat, uuidDigits[i:i+8]) {
			return true
		}
	}
	run := 0
	for i := 0; i < len(flat); i++ {
		if flat[i] == ' ' {
			run = 0
			continue
		}
		if run++; run >= 32 {
			return true
		}
	}
	return false
}

// hexDigits is s lower-cased without hyphens: a UUID's 32 hex digits.
func hexDigits(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "-", ""))
}

// hexDigitsOrGaps maps s to its hex digits, lower-cased, with every other
// character but a hyphen as one space, so runs of hex digits stay apart.
func hexDigitsOrGaps(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '-':
		case '0' <= r && r <= '9', 'a' <= r && r <= 'f':
			b.WriteRune(r)
		case 'A' <= r && r <= 'F':
			b.WriteRune(r + 'a' - 'A')
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}
