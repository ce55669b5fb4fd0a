//go:build cgo

package codeward

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of arguments, which also stops a value that
// contains itself. Python fails near the same depth (its recursion limit).
const maxDepth = 1000

// CanonicalJSON returns the canonical JSON text of v, the form shared by
// every binding (Python's codeward.policy.canonical_json):
//
//   - compact, object keys sorted by code point (byte order of UTF-8);
//   - strings escaped minimally, like JavaScript's JSON.stringify: '"', '\'
//     and control characters below U+0020 (as \b \f \n \r \t or \u00xx);
//     every other byte is copied as is;
//   - numbers printed as ECMAScript's Number.prototype.toString prints them
//     (1.0 is "1", 1e21 is "1e+21", 1e-7 is "1e-7"), NaN and ±Inf as the
//     bare words NaN, Infinity and -Infinity; integers of Go integer types
//     and integer json.Number literals are printed exactly, as Python prints
//     its ints.
//
// v may hold the types JSON decoding produces (map[string]any, []any, string,
// float64, bool, nil, json.Number) and, for convenience, Go integer types,
// float32, map[string]string, []string and []map[string]any. Any other type
// is a *[PolicyError], as is nesting deeper than 1000 levels.
func CanonicalJSON(v any) (string, error) {
	var e encoder
	if err := e.value(v); err != nil {
		return "", err
	}
	return string(e.buf), nil
}

// encoder appends canonical JSON to buf.
type encoder struct {
	buf   []byte
	depth int
}

func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		e.buf = appendString(e.buf, x)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case float64:
		e.buf = appendNumber(e.buf, x)
	case float32:
		e.buf = appendNumber(e.buf, float64(x))
	case json.Number:
		b, err := appendJSONNumber(e.buf, string(x))
		if err != nil {
			return err
		}
		e.buf = b
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int8:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int16:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case uint:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint8:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint16:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint32:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
	case map[string]any:
		return e.object(x)
	case map[string]string:
		return e.members(sortedKeys(x), func(k string) error {
			e.buf = appendString(e.buf, x[k])
			return nil
		})
	case []any:
		return e.array(len(x), func(i int) error { return e.value(x[i]) })
	case []string:
		return e.array(len(x), func(i int) error {
			e.buf = appendString(e.buf, x[i])
			return nil
		})
	case []map[string]any:
		return e.array(len(x), func(i int) error { return e.object(x[i]) })
	default:
		return &PolicyError{
			Message: fmt.Sprintf("tool arguments are not representable as JSON: %T value", v),
		}
	}
	return nil
}

// enter counts one level of nesting.
func (e *encoder) enter() error {
	e.depth++
	if e.depth > maxDepth {
		return &PolicyError{Message: "tool arguments are nested too deeply"}
	}
	return nil
}

// object appends a JSON object with sorted keys; a nil map is {}.
func (e *encoder) object(m map[string]any) error {
	return e.members(sortedKeys(m), func(k string) error { return e.value(m[k]) })
}

// members appends a JSON object of these keys, in this order, the value of each written by
// value.
func (e *encoder) members(keys []string, value func(string) error) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '{')
	for i, k := range keys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = appendString(e.buf, k)
		e.buf = append(e.buf, ':')
		if err := value(k); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	e.depth--
	return nil
}

// array appends a JSON array of n items written by item; a nil slice is [].
func (e *encoder) array(n int, item func(int) error) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := item(i); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	e.depth--
	return nil
}

// sortedKeys returns the keys of m in byte order, which for UTF-8 is code
// point order (Python's sort order of str).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string with minimal escaping.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
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
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendNumber appends f as ECMAScript's Number::toString(f) prints it.
func appendNumber(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0: // +0 and -0
		return append(b, '0')
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	// The shortest digits that round-trip, as "d.ddde±x" or "de±x".
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	mark := strings.IndexByte(string(e), 'e')
	exp, _ := strconv.Atoi(string(e[mark+1:]))
	digits := make([]byte, 0, mark)
	for _, c := range e[:mark] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	// f = 0.digits * 10^n, with k digits (ECMA-262 Number::toString).
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for i := k; i < n; i++ {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for i := n; i < 0; i++ {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}

// appendJSONNumber appends a JSON number literal the way Python prints what
// json.loads makes of it: an integer literal is a Python int, printed
// exactly; any other literal is a float, printed by appendNumber. Python's
// extensions NaN, Infinity and -Infinity are accepted too.
func appendJSONNumber(b []byte, lit string) ([]byte, error) {
	switch lit {
	case "NaN", "Infinity", "-Infinity":
		return append(b, lit...), nil
	}
	integer, ok := scanJSONNumber(lit)
	if !ok {
		return nil, &PolicyError{Message: fmt.Sprintf("invalid json.Number %q", lit)}
	}
	if integer {
		digits := strings.TrimLeft(strings.TrimPrefix(lit, "-"), "0")
		if digits == "" {
			return append(b, '0'), nil // "-0" is the int 0
		}
		if lit[0] == '-' {
			b = append(b, '-')
		}
		return append(b, digits...), nil
	}
	// Out of range is not an error: like Python's float(), a literal too
	// large is ±Inf and one too small is 0.
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !isRangeError(err) {
		return nil, &PolicyError{Message: fmt.Sprintf("invalid json.Number %q", lit)}
	}
	return appendNumber(b, f), nil
}

// isRangeError reports a strconv out-of-range error.
func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// scanJSONNumber checks the JSON number grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? (leading zeros are
// tolerated) and reports whether the literal is an integer (no fraction or
// exponent).
func scanJSONNumber(s string) (integer, ok bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if digits() == 0 {
		return false, false
	}
	integer = true
	if i < len(s) && s[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			return false, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		integer = false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false, false
		}
	}
	return integer, i == len(s)
}
