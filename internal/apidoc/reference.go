package apidoc

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strings"
)

// The reference page's model: what the template shows of the document,
// worked out once. Text from the document's descriptions is a small subset
// of CommonMark: paragraphs separated by blank lines, lists of lines that
// begin with "- ", and `code` spans. Everything is escaped by
// html/template; the page has no script and links only within itself and
// to /v1/openapi.json.

type reference struct {
	Title, Version, Summary string
	Intro                   []block
	Tags                    []tagView
	Webhooks                []opView
	Schemas                 []schemaView
	Style                   template.CSS
}

// block is a paragraph (Items nil) or a list.
type block struct {
	Text  template.HTML
	Items []template.HTML
}

type tagView struct {
	Name, Anchor string
	Desc         []block
	Ops          []opView
}

type opView struct {
	Anchor, Method, Path, Summary string
	Keyless                       bool
	Desc                          []block
	Params                        []paramView
	Body                          *contentView
	Responses                     []responseView
}

type paramView struct {
	Name, In string
	Required bool
	Type     []typePart
	Rules    string
	Desc     []block
}

// contentView is a body: a request body, or one media type of an answer.
type contentView struct {
	MediaType string
	Required  bool
	Type      []typePart
	Fields    []fieldView
	Example   string
}

type responseView struct {
	Status   string
	Desc     []block
	Headers  []headerView
	Contents []contentView
}

type headerView struct {
	Name     string
	Required bool
	Desc     template.HTML
}

type fieldView struct {
	Name     string
	Required bool
	Type     []typePart
	Rules    string
	Desc     []block
}

// typePart is a piece of a type's description: text, linked to a schema
// when Anchor is set.
type typePart struct {
	Text, Anchor string
}

type schemaView struct {
	Name, Anchor string
	Type         []typePart
	Rules        string
	Desc         []block
	Fields       []fieldView
}

// methods are the operations of a path item, in the order shown.
var methods = []string{"get", "post", "put", "patch", "delete"}

// build works out the page's model from the document.
func build(doc *node) (*reference, error) {
	info := doc.get("info")
	ref := &reference{
		Title: info.str("title"), Version: info.str("version"), Summary: info.str("summary"),
		Intro: blocks(info.str("description")),
	}
	if doc.get("paths") == nil {
		return nil, fmt.Errorf("apidoc: the document has no paths")
	}
	tags := map[string]*tagView{}
	var order []string
	for _, t := range doc.get("tags").items() {
		name := t.str("name")
		tags[name] = &tagView{Name: name, Anchor: "tag-" + slug(name), Desc: blocks(t.str("description"))}
		order = append(order, name)
	}
	doc.get("paths").each(func(path string, item *node) {
		for _, m := range methods {
			op := item.get(m)
			if op == nil {
				continue
			}
			v := operation(doc, path, m, item, op)
			tag := "Other"
			if ts := op.get("tags").items(); len(ts) > 0 {
				tag = ts[0].text
			}
			tv := tags[tag]
			if tv == nil {
				tv = &tagView{Name: tag, Anchor: "tag-" + slug(tag)}
				tags[tag] = tv
				order = append(order, tag)
			}
			tv.Ops = append(tv.Ops, v)
		}
	})
	for _, name := range order {
		if len(tags[name].Ops) > 0 {
			ref.Tags = append(ref.Tags, *tags[name])
		}
	}
	doc.get("webhooks").each(func(event string, item *node) {
		if op := item.get("post"); op != nil {
			v := operation(doc, event, "post", item, op)
			v.Anchor = "webhook-" + slug(event)
			ref.Webhooks = append(ref.Webhooks, v)
		}
	})
	doc.get("components").get("schemas").each(func(name string, s *node) {
		ref.Schemas = append(ref.Schemas, schemaView{
			Name: name, Anchor: "schema-" + name,
			Type: typeOf(s), Rules: rules(s), Desc: blocks(s.str("description")),
			Fields: fields(s, ""),
		})
	})
	return ref, nil
}

// operation is the model of one operation; item is its path item.
func operation(doc *node, path, method string, item, op *node) opView {
	v := opView{
		Anchor: "op-" + cmp.Or(op.str("operationId"), slug(method+" "+path)),
		Method: strings.ToUpper(method), Path: path, Summary: op.str("summary"),
		Desc: blocks(op.str("description")),
	}
	sec := op.get("security")
	if sec == nil {
		sec = doc.get("security")
	}
	v.Keyless = len(sec.items()) == 0
	for _, list := range []*node{item.get("parameters"), op.get("parameters")} {
		for _, p := range list.items() {
			p = resolve(doc, p)
			s := p.get("schema")
			v.Params = append(v.Params, paramView{
				Name: p.str("name"), In: p.str("in"), Required: p.isTrue("required"),
				Type: typeOf(s), Rules: rules(resolve(doc, s)), Desc: blocks(p.str("description")),
			})
		}
	}
	if rb := resolve(doc, op.get("requestBody")); rb != nil {
		rb.get("content").each(func(mt string, media *node) {
			if v.Body == nil {
				c := content(mt, media)
				if len(c.Fields) == 0 {
					// What to send is worth reading in place: a named
					// schema's fields are shown here too.
					c.Fields = fields(resolve(doc, media.get("schema")), "")
				}
				c.Required = rb.isTrue("required")
				v.Body = &c
			}
		})
	}
	op.get("responses").each(func(status string, r *node) {
		r = resolve(doc, r)
		rv := responseView{Status: status, Desc: blocks(r.str("description"))}
		r.get("headers").each(func(name string, h *node) {
			h = resolve(doc, h)
			rv.Headers = append(rv.Headers, headerView{Name: name, Required: h.isTrue("required"), Desc: inline(h.str("description"))})
		})
		r.get("content").each(func(mt string, media *node) {
			rv.Contents = append(rv.Contents, content(mt, media))
		})
		v.Responses = append(v.Responses, rv)
	})
	sortStatuses(v.Responses)
	return v
}

// content is the model of a media type: its schema, the fields of an
// inline object schema, and its example.
func content(mediaType string, media *node) contentView {
	c := contentView{MediaType: mediaType}
	if s := media.get("schema"); s != nil {
		c.Type = typeOf(s)
		c.Fields = fields(s, "")
	}
	if ex := media.get("example"); ex != nil {
		c.Example = ex.marshal()
	}
	return c
}

// resolve follows a $ref (of a parameter, response, header or request
// body); other nodes are returned as they are.
func resolve(doc, n *node) *node {
	for range 8 { // references do not chain deeper
		ref := n.str("$ref")
		if ref == "" {
			return n
		}
		n = doc.lookup(ref)
	}
	return n
}

// fields lists the properties of an inline object schema, dotted, and of
// the inline objects within it. A property that is a named schema is
// linked, not expanded: the schema has its own section.
func fields(s *node, prefix string) []fieldView {
	if s == nil || s.get("$ref") != nil {
		return nil
	}
	var out []fieldView
	for _, part := range s.get("allOf").items() {
		if part.get("$ref") == nil {
			out = append(out, fields(part, prefix)...)
		}
	}
	required := map[string]bool{}
	for _, r := range s.get("required").items() {
		required[r.text] = true
	}
	s.get("properties").each(func(name string, p *node) {
		desc := p.str("description")
		out = append(out, fieldView{
			Name: prefix + name, Required: required[name],
			Type: typeOf(p), Rules: rules(p), Desc: blocks(desc),
		})
		if p.get("$ref") == nil && p.get("properties") != nil {
			out = append(out, fields(p, prefix+name+".")...)
		}
	})
	return out
}

// typeOf describes a schema's type in a few words, linking named schemas.
func typeOf(s *node) []typePart {
	switch {
	case s == nil:
		return []typePart{{Text: "any"}}
	case s.kind == kindBool:
		if s.b {
			return []typePart{{Text: "any"}}
		}
		return []typePart{{Text: "never present"}}
	}
	if ref := s.str("$ref"); ref != "" {
		name := ref[strings.LastIndexByte(ref, '/')+1:]
		return []typePart{{Text: name, Anchor: "schema-" + name}}
	}
	if c := s.get("const"); c != nil {
		return []typePart{{Text: "always " + c.marshal()}}
	}
	if e := s.get("enum"); e != nil {
		vals := make([]string, 0, len(e.vals))
		for _, v := range e.vals {
			vals = append(vals, v.marshal())
		}
		return []typePart{{Text: "one of " + strings.Join(vals, ", ")}}
	}
	for _, comb := range []struct{ key, sep string }{{"anyOf", " or "}, {"oneOf", " or "}, {"allOf", " and "}} {
		if parts := s.get(comb.key).items(); len(parts) > 0 {
			var out []typePart
			for i, p := range parts {
				if i > 0 {
					out = append(out, typePart{Text: comb.sep})
				}
				out = append(out, typeOf(p)...)
			}
			return out
		}
	}
	var names []string
	if t := s.get("type"); t != nil {
		if t.kind == kindString {
			names = []string{t.text}
		}
		for _, x := range t.items() {
			names = append(names, x.text)
		}
	}
	if len(names) == 0 {
		if s.get("properties") != nil {
			names = []string{"object"}
		} else {
			return []typePart{{Text: "any"}}
		}
	}
	var out []typePart
	for i, name := range names {
		if i > 0 {
			out = append(out, typePart{Text: " or "})
		}
		switch name {
		case "array":
			out = append(out, typePart{Text: "array of "})
			out = append(out, typeOf(s.get("items"))...)
		case "object":
			if ap := s.get("additionalProperties"); ap != nil && ap.kind == kindObject {
				out = append(out, typePart{Text: "object of "})
				out = append(out, typeOf(ap)...)
			} else {
				out = append(out, typePart{Text: "object"})
			}
		default:
			out = append(out, typePart{Text: name})
		}
	}
	return out
}

// rules describes a schema's constraints: format, pattern, lengths, ranges.
func rules(s *node) string {
	if s == nil {
		return ""
	}
	var out []string
	if f := s.str("format"); f != "" {
		out = append(out, "format "+f)
	}
	num := func(k string) string {
		if v := s.get(k); v != nil && v.kind == kindNumber {
			return v.text
		}
		return ""
	}
	switch lo, hi := num("minLength"), num("maxLength"); {
	case lo != "" && hi != "":
		out = append(out, lo+" to "+hi+" characters")
	case lo != "":
		out = append(out, "at least "+lo+" characters")
	case hi != "":
		out = append(out, "at most "+hi+" characters")
	}
	if v := num("minimum"); v != "" {
		out = append(out, "at least "+v)
	}
	if v := num("maximum"); v != "" {
		out = append(out, "at most "+v)
	}
	if v := num("maxProperties"); v != "" {
		out = append(out, "at most "+v+" keys")
	}
	if p := s.str("pattern"); p != "" {
		out = append(out, "matches "+p)
	}
	if s.get("additionalProperties") != nil && s.get("additionalProperties").kind == kindBool && !s.get("additionalProperties").b {
		out = append(out, "no other fields")
	}
	return strings.Join(out, "; ")
}

// blocks splits a description into paragraphs and lists.
func blocks(text string) []block {
	var out []block
	for para := range strings.SplitSeq(strings.TrimSpace(text), "\n\n") {
		if para == "" {
			continue
		}
		var lead []string
		var b block
		for line := range strings.SplitSeq(para, "\n") {
			if item, ok := strings.CutPrefix(line, "- "); ok {
				b.Items = append(b.Items, inline(item))
			} else if len(b.Items) > 0 {
				b.Items[len(b.Items)-1] += " " + inline(line)
			} else {
				lead = append(lead, line)
			}
		}
		if len(lead) > 0 {
			out = append(out, block{Text: inline(strings.Join(lead, " "))})
		}
		if len(b.Items) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// inline escapes text and sets its `code` spans in <code>.
func inline(text string) template.HTML {
	var b strings.Builder
	for i, seg := range strings.Split(text, "`") {
		if i%2 == 1 {
			b.WriteString("<code>" + template.HTMLEscapeString(seg) + "</code>")
		} else {
			b.WriteString(template.HTMLEscapeString(seg))
		}
	}
	return template.HTML(b.String()) // every piece of text was escaped above
}

// slug makes an anchor of a name: lower-case letters and digits, runs of
// anything else as one hyphen.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// sortStatuses orders an operation's answers by status (the document
// lists them so already; this keeps the page so whatever the document's
// order).
func sortStatuses(rs []responseView) {
	slices.SortStableFunc(rs, func(a, b responseView) int { return cmp.Compare(a.Status, b.Status) })
}
