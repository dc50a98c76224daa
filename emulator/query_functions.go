package emulator

import (
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// arity is the accepted argument count range of a built-in function.
type arity struct{ min, max int }

// builtins lists the system functions the emulator implements.
var builtins = map[string]arity{
	// aggregates
	"COUNT": {1, 1}, "SUM": {1, 1}, "MIN": {1, 1}, "MAX": {1, 1}, "AVG": {1, 1},
	// type checking
	"IS_ARRAY": {1, 1}, "IS_BOOL": {1, 1}, "IS_DEFINED": {1, 1}, "IS_NULL": {1, 1},
	"IS_NUMBER": {1, 1}, "IS_OBJECT": {1, 1}, "IS_PRIMITIVE": {1, 1}, "IS_STRING": {1, 1},
	"IS_FINITE_NUMBER": {1, 1}, "IS_INTEGER": {1, 1},
	// strings
	"CONCAT": {2, 64}, "CONTAINS": {2, 3}, "ENDSWITH": {2, 3}, "STARTSWITH": {2, 3},
	"INDEX_OF": {2, 3}, "LEFT": {2, 2}, "RIGHT": {2, 2}, "LENGTH": {1, 1}, "LOWER": {1, 1},
	"UPPER": {1, 1}, "LTRIM": {1, 1}, "RTRIM": {1, 1}, "TRIM": {1, 1}, "REPLACE": {3, 3},
	"REPLICATE": {2, 2}, "REVERSE": {1, 1}, "SUBSTRING": {3, 3}, "TOSTRING": {1, 1},
	"STRINGEQUALS": {2, 3}, "REGEXMATCH": {2, 3}, "STRINGTOARRAY": {1, 1},
	"STRINGTOBOOLEAN": {1, 1}, "STRINGTONULL": {1, 1}, "STRINGTONUMBER": {1, 1},
	"STRINGTOOBJECT": {1, 1},
	// math
	"ABS": {1, 1}, "CEILING": {1, 1}, "FLOOR": {1, 1}, "ROUND": {1, 1}, "TRUNC": {1, 1},
	"SQRT": {1, 1}, "SQUARE": {1, 1}, "POWER": {2, 2}, "EXP": {1, 1}, "LOG": {1, 2},
	"LOG10": {1, 1}, "SIGN": {1, 1}, "PI": {0, 0}, "SIN": {1, 1}, "COS": {1, 1},
	"TAN": {1, 1}, "COT": {1, 1}, "ASIN": {1, 1}, "ACOS": {1, 1}, "ATAN": {1, 1}, "ATN2": {2, 2},
	"DEGREES": {1, 1}, "RADIANS": {1, 1}, "NUMBERBIN": {1, 2},
	// arrays
	"ARRAY_CONTAINS": {2, 3}, "ARRAY_LENGTH": {1, 1}, "ARRAY_SLICE": {2, 3},
	"ARRAY_CONCAT": {2, 64}, "SETINTERSECT": {2, 2}, "SETUNION": {2, 2},
	"ARRAY_CONTAINS_ANY": {2, 64}, "ARRAY_CONTAINS_ALL": {2, 64},
	// conditional
	"IIF": {3, 3},
	// dates
	"GETCURRENTDATETIME": {0, 0}, "GETCURRENTTIMESTAMP": {0, 0}, "GETCURRENTTICKS": {0, 0},
	"DATETIMETOTIMESTAMP": {1, 1}, "TIMESTAMPTODATETIME": {1, 1},
}

// checkCall validates a function call at parse time.
func checkCall(c callExpr, pos int) error {
	a, ok := builtins[c.name]
	if !ok {
		return errAt(pos, "'%s' is not a recognized built-in function name.", c.name)
	}
	if len(c.args) < a.min || len(c.args) > a.max {
		return errAt(pos, "The %s function requires %d argument(s).", c.name, a.min)
	}
	return nil
}

// callBuiltin evaluates a non-aggregate system function. Arguments of the
// wrong type make the result undefined, as in the service.
func callBuiltin(name string, a []value) value {
	switch name {
	case "IS_ARRAY":
		return boolValue(a[0].k == kArray)
	case "IS_BOOL":
		return boolValue(a[0].k == kBool)
	case "IS_DEFINED":
		return boolValue(a[0].defined())
	case "IS_NULL":
		return boolValue(a[0].k == kNull)
	case "IS_NUMBER":
		return boolValue(a[0].k == kNumber)
	case "IS_OBJECT":
		return boolValue(a[0].k == kObject)
	case "IS_PRIMITIVE":
		return boolValue(a[0].k == kNull || a[0].k == kBool || a[0].k == kNumber || a[0].k == kString)
	case "IS_STRING":
		return boolValue(a[0].k == kString)
	case "IS_FINITE_NUMBER":
		return boolValue(a[0].k == kNumber && !math.IsInf(a[0].n, 0) && !math.IsNaN(a[0].n))
	case "IS_INTEGER":
		return boolValue(a[0].k == kNumber && a[0].n == math.Trunc(a[0].n) && math.Abs(a[0].n) < 1<<63)
	case "IIF":
		if a[0].truthy() {
			return a[1]
		}
		return a[2]
	}
	if v, ok := stringFunc(name, a); ok {
		return v
	}
	if v, ok := mathFunc(name, a); ok {
		return v
	}
	if v, ok := arrayFunc(name, a); ok {
		return v
	}
	return dateFunc(name, a)
}

func ignoreCaseArg(a []value, i int) (bool, bool) {
	if len(a) <= i {
		return false, true
	}
	if a[i].k != kBool {
		return false, false
	}
	return a[i].b, true
}

func stringFunc(name string, a []value) (value, bool) {
	switch name {
	case "CONCAT":
		var sb strings.Builder
		for _, v := range a {
			if v.k != kString {
				return undefined, true
			}
			sb.WriteString(v.s)
		}
		return stringValue(sb.String()), true
	case "CONTAINS", "ENDSWITH", "STARTSWITH", "STRINGEQUALS":
		ic, ok := ignoreCaseArg(a, 2)
		if !ok || !allKind(kString, a[0], a[1]) {
			return undefined, true
		}
		s, t := foldCase(a[0].s, ic), foldCase(a[1].s, ic)
		switch name {
		case "CONTAINS":
			return boolValue(strings.Contains(s, t)), true
		case "ENDSWITH":
			return boolValue(strings.HasSuffix(s, t)), true
		case "STARTSWITH":
			return boolValue(strings.HasPrefix(s, t)), true
		}
		return boolValue(s == t), true
	case "INDEX_OF":
		if !allKind(kString, a[0], a[1]) {
			return undefined, true
		}
		r := []rune(a[0].s)
		start := 0
		if len(a) == 3 {
			if a[2].k != kNumber {
				return undefined, true
			}
			start = int(a[2].n)
			if start < 0 || start > len(r) {
				return numberValue(-1), true
			}
		}
		i := strings.Index(string(r[start:]), a[1].s)
		if i < 0 {
			return numberValue(-1), true
		}
		return numberValue(float64(start + utf8.RuneCountInString(string(r[start:])[:i]))), true
	case "LEFT", "RIGHT":
		if a[0].k != kString || a[1].k != kNumber {
			return undefined, true
		}
		r := []rune(a[0].s)
		n := int(a[1].n)
		if n < 0 {
			n = 0
		}
		if n > len(r) {
			n = len(r)
		}
		if name == "LEFT" {
			return stringValue(string(r[:n])), true
		}
		return stringValue(string(r[len(r)-n:])), true
	case "LENGTH":
		if a[0].k != kString {
			return undefined, true
		}
		return numberValue(float64(utf8.RuneCountInString(a[0].s))), true
	case "LOWER", "UPPER", "LTRIM", "RTRIM", "TRIM", "REVERSE":
		if a[0].k != kString {
			return undefined, true
		}
		s := a[0].s
		switch name {
		case "LOWER":
			s = strings.ToLower(s)
		case "UPPER":
			s = strings.ToUpper(s)
		case "LTRIM":
			s = strings.TrimLeft(s, " \t\n\r")
		case "RTRIM":
			s = strings.TrimRight(s, " \t\n\r")
		case "TRIM":
			s = strings.Trim(s, " \t\n\r")
		case "REVERSE":
			r := []rune(s)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			s = string(r)
		}
		return stringValue(s), true
	case "REPLACE":
		if !allKind(kString, a[0], a[1], a[2]) {
			return undefined, true
		}
		if a[1].s == "" {
			return a[0], true
		}
		return stringValue(strings.ReplaceAll(a[0].s, a[1].s, a[2].s)), true
	case "REPLICATE":
		if a[0].k != kString || a[1].k != kNumber || a[1].n < 0 || a[1].n*float64(len(a[0].s)) > 10000 {
			return undefined, true
		}
		return stringValue(strings.Repeat(a[0].s, int(a[1].n))), true
	case "SUBSTRING":
		if a[0].k != kString || a[1].k != kNumber || a[2].k != kNumber {
			return undefined, true
		}
		r := []rune(a[0].s)
		start, n := int(a[1].n), int(a[2].n)
		if start < 0 {
			start = 0
		}
		if start > len(r) || n <= 0 {
			return stringValue(""), true
		}
		end := start + n
		if end > len(r) {
			end = len(r)
		}
		return stringValue(string(r[start:end])), true
	case "TOSTRING":
		switch a[0].k {
		case kUndefined:
			return undefined, true
		case kString:
			return a[0], true
		}
		return stringValue(a[0].jsonText()), true
	case "REGEXMATCH":
		if !allKind(kString, a[0], a[1]) {
			return undefined, true
		}
		pat := a[1].s
		if len(a) == 3 {
			if a[2].k != kString {
				return undefined, true
			}
			flags := ""
			for _, f := range a[2].s {
				switch f {
				case 'i', 'm', 's':
					flags += string(f)
				case 'x':
				default:
					return undefined, true
				}
			}
			if flags != "" {
				pat = "(?" + flags + ")" + pat
			}
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return undefined, true
		}
		return boolValue(re.MatchString(a[0].s)), true
	case "STRINGTOARRAY", "STRINGTOBOOLEAN", "STRINGTONULL", "STRINGTONUMBER", "STRINGTOOBJECT":
		if a[0].k != kString {
			return undefined, true
		}
		v, err := parseJSON([]byte(strings.TrimSpace(a[0].s)))
		if err != nil {
			return undefined, true
		}
		want := map[string]kind{"STRINGTOARRAY": kArray, "STRINGTOBOOLEAN": kBool, "STRINGTONULL": kNull,
			"STRINGTONUMBER": kNumber, "STRINGTOOBJECT": kObject}[name]
		if v.k != want {
			return undefined, true
		}
		return v, true
	}
	return undefined, false
}

func mathFunc(name string, a []value) (value, bool) {
	if name == "PI" {
		return numberValue(math.Pi), true
	}
	unary := map[string]func(float64) float64{
		"ABS": math.Abs, "CEILING": math.Ceil, "FLOOR": math.Floor, "TRUNC": math.Trunc,
		"SQRT": math.Sqrt, "EXP": math.Exp, "LOG10": math.Log10,
		"SIN": math.Sin, "COS": math.Cos, "TAN": math.Tan, "ASIN": math.Asin, "ACOS": math.Acos, "ATAN": math.Atan,
		"SQUARE":  func(x float64) float64 { return x * x },
		"COT":     func(x float64) float64 { return 1 / math.Tan(x) },
		"DEGREES": func(x float64) float64 { return x * 180 / math.Pi },
		"RADIANS": func(x float64) float64 { return x * math.Pi / 180 },
		"ROUND": func(x float64) float64 {
			// Rounds half away from zero.
			return math.Round(x)
		},
		"SIGN": func(x float64) float64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		},
	}
	if f, ok := unary[name]; ok {
		if a[0].k != kNumber {
			return undefined, true
		}
		r := f(a[0].n)
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return undefined, true
		}
		return numberValue(r), true
	}
	switch name {
	case "POWER", "ATN2":
		if !allKind(kNumber, a[0], a[1]) {
			return undefined, true
		}
		var r float64
		if name == "POWER" {
			r = math.Pow(a[0].n, a[1].n)
		} else {
			r = math.Atan2(a[1].n, a[0].n)
		}
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return undefined, true
		}
		return numberValue(r), true
	case "LOG":
		if a[0].k != kNumber {
			return undefined, true
		}
		r := math.Log(a[0].n)
		if len(a) == 2 {
			if a[1].k != kNumber {
				return undefined, true
			}
			r /= math.Log(a[1].n)
		}
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return undefined, true
		}
		return numberValue(r), true
	case "NUMBERBIN":
		if a[0].k != kNumber {
			return undefined, true
		}
		size := 1.0
		if len(a) == 2 {
			if a[1].k != kNumber || a[1].n <= 0 {
				return undefined, true
			}
			size = a[1].n
		}
		return numberValue(math.Floor(a[0].n/size) * size), true
	}
	return undefined, false
}

func arrayFunc(name string, a []value) (value, bool) {
	switch name {
	case "ARRAY_CONTAINS":
		if a[0].k != kArray {
			return undefined, true
		}
		partial, ok := ignoreCaseArg(a, 2)
		if !ok {
			return undefined, true
		}
		for _, e := range a[0].elems() {
			if arrayContainsMatch(e, a[1], partial) {
				return jsonTrue, true
			}
		}
		return jsonFalse, true
	case "ARRAY_CONTAINS_ANY", "ARRAY_CONTAINS_ALL":
		if a[0].k != kArray {
			return undefined, true
		}
		elems := a[0].elems()
		for _, want := range a[1:] {
			found := false
			for _, e := range elems {
				if e.k == want.k && equalValues(e, want) {
					found = true
					break
				}
			}
			if found && name == "ARRAY_CONTAINS_ANY" {
				return jsonTrue, true
			}
			if !found && name == "ARRAY_CONTAINS_ALL" {
				return jsonFalse, true
			}
		}
		return boolValue(name == "ARRAY_CONTAINS_ALL"), true
	case "ARRAY_LENGTH":
		if a[0].k != kArray {
			return undefined, true
		}
		return numberValue(float64(len(a[0].elems()))), true
	case "ARRAY_SLICE":
		if a[0].k != kArray || a[1].k != kNumber || (len(a) == 3 && a[2].k != kNumber) {
			return undefined, true
		}
		elems := a[0].elems()
		n := len(elems)
		start := int(a[1].n)
		if start < 0 {
			start += n
			if start < 0 {
				start = 0
			}
		}
		if start > n {
			start = n
		}
		end := n
		if len(a) == 3 {
			l := int(a[2].n)
			if l < 0 {
				l = 0
			}
			if start+l < end {
				end = start + l
			}
		}
		return arrayValue(append([]value(nil), elems[start:end]...)), true
	case "ARRAY_CONCAT":
		var out []value
		for _, v := range a {
			if v.k != kArray {
				return undefined, true
			}
			out = append(out, v.elems()...)
		}
		if out == nil {
			out = []value{}
		}
		return arrayValue(out), true
	case "SETINTERSECT", "SETUNION":
		if a[0].k != kArray || a[1].k != kArray {
			return undefined, true
		}
		seen := map[string]bool{}
		var out []value
		add := func(v value) {
			k := v.canonical()
			if !seen[k] {
				seen[k] = true
				out = append(out, v)
			}
		}
		if name == "SETUNION" {
			for _, v := range a[0].elems() {
				add(v)
			}
			for _, v := range a[1].elems() {
				add(v)
			}
		} else {
			other := map[string]bool{}
			for _, v := range a[1].elems() {
				other[v.canonical()] = true
			}
			for _, v := range a[0].elems() {
				if other[v.canonical()] {
					add(v)
				}
			}
		}
		if out == nil {
			out = []value{}
		}
		return arrayValue(out), true
	}
	return undefined, false
}

// arrayContainsMatch compares an element for ARRAY_CONTAINS; with partial,
// an object matches when it contains every property of want.
func arrayContainsMatch(e, want value, partial bool) bool {
	if e.k != want.k {
		return false
	}
	if partial && e.k == kObject {
		for _, m := range want.members() {
			got := e.get(m.key)
			if got.k != m.val.k || !equalValues(got, m.val) {
				return false
			}
		}
		return true
	}
	return equalValues(e, want)
}

const isoLayout = "2006-01-02T15:04:05.0000000Z"

func dateFunc(name string, a []value) value {
	now := time.Now().UTC()
	switch name {
	case "GETCURRENTDATETIME":
		return stringValue(now.Format(isoLayout))
	case "GETCURRENTTIMESTAMP":
		return numberValue(float64(now.UnixMilli()))
	case "GETCURRENTTICKS":
		return numberValue(float64(now.UnixNano()/100 + 621355968000000000))
	case "DATETIMETOTIMESTAMP":
		if a[0].k != kString {
			return undefined
		}
		t, err := time.Parse(time.RFC3339Nano, a[0].s)
		if err != nil {
			return undefined
		}
		return numberValue(float64(t.UnixMilli()))
	case "TIMESTAMPTODATETIME":
		if a[0].k != kNumber {
			return undefined
		}
		return stringValue(time.UnixMilli(int64(a[0].n)).UTC().Format(isoLayout))
	}
	return undefined
}
