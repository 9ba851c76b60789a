package dashboard

import (
	"html/template"
	"strings"

	"github.com/paygate/paygate/internal/paygate"
)

// baseFuncs are the template functions of the framework and the
// Developers and Audit pages.
func baseFuncs() template.FuncMap {
	return template.FuncMap{
		// modeURL is a path under /dashboard/{mode}: {{modeURL .V "/payments"}}.
		"modeURL": func(v *viewer, rest string) string { return modePath(v, rest) },
		// isLive reports whether the viewer looks at live data.
		"isLive": func(v *viewer) bool { return v != nil && v.Mode == paygate.ModeLive },
		// section is the first path segment after /dashboard/{mode}/, for
		// marking the current nav entry ("" is the overview).
		"section":    sectionOf,
		"upper":      strings.ToUpper,
		"auditLabel": auditLabel,
		// keyTable is the data of the "keytable" template.
		"keyTable": func(v *viewer, rows []keyRow, kind string) keyTableData {
			return keyTableData{V: v, Rows: rows, Kind: kind}
		},
	}
}

// sectionOf is the first segment of a path after /dashboard/{mode}/, or
// the page's own segment for a page outside the modes ("account" for
// /dashboard/account, which is no mode's Overview).
func sectionOf(path string) string {
	rest := strings.TrimPrefix(path, root+"/")
	first, sub, ok := strings.Cut(rest, "/")
	if first != string(paygate.ModeTest) && first != string(paygate.ModeLive) {
		return first
	}
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(sub, "/")
	return s
}

// keyTableData is one table of API keys on the Developers page.
type keyTableData struct {
	V    *viewer
	Rows []keyRow
	Kind string
}
