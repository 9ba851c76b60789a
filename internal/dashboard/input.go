package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// badInputMessage is the answer to a query or form that holds text the
// dashboard cannot use.
const badInputMessage = "The address or the form holds text that is not valid: it must be UTF-8 without NUL characters. Go back and try again."

// cleanInput reports whether every query parameter and posted form field of
// r, names and values, is UTF-8 text without U+0000 (decisions §15). Such
// text can be neither stored nor compared by PostgreSQL, so a search box or
// filter holding it (%ff, %00) is bad input, never a 500. The form is read
// only when something already parsed it.
func cleanInput(r *http.Request) bool {
	return cleanValues(r.URL.Query()) && cleanValues(r.PostForm)
}

func cleanValues(vals url.Values) bool {
	for k, vs := range vals {
		if !cleanText(k) {
			return false
		}
		for _, v := range vs {
			if !cleanText(v) {
				return false
			}
		}
	}
	return true
}

func cleanText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }
