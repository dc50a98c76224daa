package emulator

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokenKind classifies a lexical token of the Cosmos DB SQL dialect.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokIdent
	tokKeyword
	tokNumber
	tokString
	tokParam
	tokPunct
)

// token is one lexical token; text is upper-cased for keywords.
type token struct {
	kind tokenKind
	text string  // identifier name, keyword (upper case), punctuation, parameter name with '@'
	str  string  // decoded string literal
	num  float64 // number literal
	pos  int     // byte offset in the query text
}

// queryError is a syntax or semantic error in a query; the service answers
// it with 400 Bad Request.
type queryError struct {
	msg string
	pos int
}

// Error returns the message the service reports for the query.
func (e *queryError) Error() string { return e.msg }

func errAt(pos int, format string, args ...any) error {
	return &queryError{msg: fmt.Sprintf(format, args...), pos: pos}
}

// keywords of the dialect. Function names (COUNT, IS_DEFINED, ...) are
// identifiers, resolved by the parser.
var keywords = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true, "NOT": true,
	"IN": true, "BETWEEN": true, "ORDER": true, "BY": true, "ASC": true, "DESC": true,
	"TOP": true, "DISTINCT": true, "VALUE": true, "AS": true, "OFFSET": true, "LIMIT": true,
	"GROUP": true, "JOIN": true, "TRUE": true, "FALSE": true, "NULL": true, "UNDEFINED": true,
	"LIKE": true, "ESCAPE": true, "EXISTS": true, "ARRAY": true, "UDF": true,
}

// lex splits a query into tokens.
func lex(q string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(q) {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			s, n, err := lexString(q, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tokString, str: s, pos: i})
			i = n
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9'):
			f, n, err := lexNumber(q, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tokNumber, num: f, text: q[i:n], pos: i})
			i = n
		case c == '@':
			j := i + 1
			for j < len(q) && isIdentByte(q, j) {
				_, size := utf8.DecodeRuneInString(q[j:])
				j += size
			}
			if j == i+1 {
				return nil, errAt(i, "Syntax error, incorrect syntax near '@'.")
			}
			toks = append(toks, token{kind: tokParam, text: q[i:j], pos: i})
			i = j
		case isIdentStart(q, i):
			j := i
			for j < len(q) && isIdentByte(q, j) {
				_, size := utf8.DecodeRuneInString(q[j:])
				j += size
			}
			word := q[i:j]
			if up := strings.ToUpper(word); keywords[up] {
				toks = append(toks, token{kind: tokKeyword, text: up, pos: i})
			} else {
				toks = append(toks, token{kind: tokIdent, text: word, pos: i})
			}
			i = j
		default:
			p := lexPunct(q[i:])
			if p == "" {
				return nil, errAt(i, "Syntax error, invalid token '%c'.", c)
			}
			toks = append(toks, token{kind: tokPunct, text: p, pos: i})
			i += len(p)
		}
	}
	toks = append(toks, token{kind: tokEOF, pos: len(q)})
	return toks, nil
}

func isIdentStart(q string, i int) bool {
	c := q[i]
	if c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
		return true
	}
	if c >= utf8.RuneSelf {
		r, _ := utf8.DecodeRuneInString(q[i:])
		return unicode.IsLetter(r)
	}
	return false
}

func isIdentByte(q string, i int) bool {
	c := q[i]
	if c >= '0' && c <= '9' {
		return true
	}
	return isIdentStart(q, i)
}

var puncts = []string{">>>", "<<", ">>", "<=", ">=", "!=", "<>", "||", "??",
	"(", ")", "[", "]", "{", "}", ",", ".", ":", "*", "+", "-", "/", "%", "=", "<", ">", "?", "&", "|", "^", "~"}

func lexPunct(s string) string {
	for _, p := range puncts {
		if strings.HasPrefix(s, p) {
			return p
		}
	}
	return ""
}

func lexString(q string, start int) (string, int, error) {
	quote := q[start]
	var sb strings.Builder
	i := start + 1
	for i < len(q) {
		c := q[i]
		switch {
		case c == quote:
			return sb.String(), i + 1, nil
		case c == '\\':
			i++
			if i >= len(q) {
				return "", 0, errAt(start, "Syntax error, unterminated string literal.")
			}
			switch q[i] {
			case '\'', '"', '\\', '/':
				sb.WriteByte(q[i])
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r, n, ok := hex4([]byte(q), i+1)
				if !ok {
					return "", 0, errAt(i, "Syntax error, invalid unicode escape sequence.")
				}
				sb.WriteRune(r)
				i += n
			default:
				return "", 0, errAt(i, "Syntax error, invalid escape sequence '\\%c'.", q[i])
			}
			i++
		default:
			sb.WriteByte(c)
			i++
		}
	}
	return "", 0, errAt(start, "Syntax error, unterminated string literal.")
}

func lexNumber(q string, start int) (float64, int, error) {
	i := start
	if strings.HasPrefix(q[i:], "0x") || strings.HasPrefix(q[i:], "0X") {
		j := i + 2
		for j < len(q) && strings.IndexByte("0123456789abcdefABCDEF", q[j]) >= 0 {
			j++
		}
		n, err := strconv.ParseUint(q[i+2:j], 16, 64)
		if err != nil {
			return 0, 0, errAt(start, "Syntax error, invalid number literal.")
		}
		return float64(n), j, nil
	}
	for i < len(q) && q[i] >= '0' && q[i] <= '9' {
		i++
	}
	if i < len(q) && q[i] == '.' {
		i++
		for i < len(q) && q[i] >= '0' && q[i] <= '9' {
			i++
		}
	}
	if i < len(q) && (q[i] == 'e' || q[i] == 'E') {
		j := i + 1
		if j < len(q) && (q[j] == '+' || q[j] == '-') {
			j++
		}
		if j < len(q) && q[j] >= '0' && q[j] <= '9' {
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			i = j
		}
	}
	f, err := strconv.ParseFloat(q[start:i], 64)
	if err != nil {
		return 0, 0, errAt(start, "Syntax error, invalid number literal '%s'.", q[start:i])
	}
	return f, i, nil
}
