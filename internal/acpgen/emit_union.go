package main

import (
	_ "embed"
	"fmt"
	"strings"
)

func (e *emitter) unionDecl(u *union) {
	var doc docText
	if u.Tag == "" {
		doc.para("%s is one of these forms, told apart by their JSON shape (tried in this order):", u.Name)
	} else {
		doc.para("%s is one of these variants, told apart by the value of %q:", u.Name, u.Tag)
	}
	for _, v := range u.Variants {
		var what string
		switch {
		case v.Decl.Kind == kindValue:
			what = "[" + v.Decl.Name + "]"
		case u.Tag == "":
			what = "[*" + v.Decl.Name + "]"
		case v.Tag == "" && len(v.Aliases) > 0:
			what = fmt.Sprintf("[*%s] (no %q, or %s)", v.Decl.Name, u.Tag, quoteList(v.Aliases))
		case v.Tag == "":
			what = fmt.Sprintf("[*%s] (no %q)", v.Decl.Name, u.Tag)
		default:
			what = fmt.Sprintf("[*%s] (%q)", v.Decl.Name, v.Tag)
		}
		if s := firstSentence(v.Doc); s != "" {
			what += ": " + doc.inline(s, e.goType)
		}
		doc.item("%s", what)
	}
	var tail []string
	if u.Tag != "" {
		tail = append(tail, fmt.Sprintf("Other values decode into [*%s].", u.Unknown.Name))
	}
	if u.Flat {
		tail = append(tail, "Its members are written into the object that holds it.")
	}
	if len(tail) > 0 {
		doc.para("%s", strings.Join(tail, " "))
	}
	if d := e.m.decls[u.Name]; d != nil {
		e.schemaDoc(&doc, d.Doc, d.Deprecated)
	}
	e.doc(&doc, "")
	e.p("type %s interface{ is%s() }\n", u.Name, u.Name)
	if u.Tag != "" {
		e.taggedCodec(u)
	} else {
		e.untaggedCodec(u)
	}
}

// firstSentence is the first sentence of a description: enough to tell variants apart in a list.
func firstSentence(desc string) string {
	para, _, _ := strings.Cut(desc, "\n\n")
	para = strings.Join(strings.Fields(para), " ")
	if i := strings.Index(para, ". "); i >= 0 {
		return para[:i+1]
	}
	return para
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// unionDecoderHead opens the decoder of u, leaving the object's members in f.
func (e *emitter) unionDecoderHead(u *union) {
	if u.Flat {
		e.p("func genDecode%s(f genFields) (%s, error) {", u.Name, u.Name)
		return
	}
	e.p("func genDecode%s(b []byte) (%s, error) {", u.Name, u.Name)
	e.p("f, err := genParseObject(b)")
	e.p("if err != nil {\nreturn nil, err\n}")
}

func (e *emitter) taggedCodec(u *union) {
	e.unionDecoderHead(u)
	e.p("var v interface {\n%s\ngenObject\n}", u.Name)
	e.p("switch tag, ok, err := genTag(f, %q); {", u.Tag)
	e.p("case err != nil:\nreturn nil, err")
	hasDefault := false
	for _, v := range u.Variants {
		var conds []string
		if v.Tag == "" {
			conds = append(conds, "!ok")
			hasDefault = true
		} else {
			conds = append(conds, fmt.Sprintf("tag == %q", v.Tag))
		}
		for _, a := range v.Aliases {
			conds = append(conds, fmt.Sprintf("tag == %q", a))
		}
		e.p("case %s:\nv = new(%s)", strings.Join(conds, ", "), v.Decl.Name)
	}
	if !hasDefault {
		e.p("case !ok:\nreturn nil, errors.New(%q)", fmt.Sprintf("%s without %q", u.Name, u.Tag))
	}
	raw := "genCanonical(b)" // as received, member order kept
	if u.Flat {
		raw = "genRawObject(f)" // only the members that are not the holder's own
	}
	e.p("default:\nreturn &%s{Kind: tag, Raw: %s}, nil", u.Unknown.Name, raw)
	e.p("}")
	e.p("return v, v.decodeFields(f)")
	e.p("}\n")

	e.p("func genEncode%s(v %s) (json.RawMessage, error) {", u.Name, u.Name)
	e.p("switch v := v.(type) {")
	for _, v := range u.Variants {
		key := u.Tag
		if v.Tag == "" {
			key = "" // the default variant goes without a discriminator
		}
		e.p("case *%s:\nreturn genTagged(%q, %q, v)", v.Decl.Name, key, v.Tag)
	}
	e.p("case *%s:\nif v != nil {\nreturn genUnknownJSON(%q, v.Kind, v.Raw)\n}", u.Unknown.Name, u.Tag)
	e.p("}")
	e.p("return nil, fmt.Errorf(\"cannot encode %%T as %s\", v)", u.Name)
	e.p("}\n")
}

func (e *emitter) untaggedCodec(u *union) {
	objects := u.Variants[0].Decl.Kind == kindStruct
	if objects {
		e.unionDecoderHead(u)
		for _, v := range u.Variants {
			e.p("if v := new(%s); v.decodeFields(f) == nil {\nreturn v, nil\n}", v.Decl.Name)
		}
	} else {
		e.p("func genDecode%s(b []byte) (%s, error) {", u.Name, u.Name)
		e.p("if genIsNull(b) {\nreturn nil, errors.New(\"null %s\")\n}", u.Name)
		for _, v := range u.Variants {
			dec := "genJSON[" + v.Decl.Under + "]"
			if strings.HasPrefix(v.Decl.Under, "[]") {
				dec = fmt.Sprintf("genSlice(genJSON[%s], false, true)", strings.TrimPrefix(v.Decl.Under, "[]"))
			}
			e.p("if v, err := %s(b); err == nil {\nreturn %s(v), nil\n}", dec, v.Decl.Name)
		}
	}
	e.p("return nil, errors.New(\"value matches no form of %s\")", u.Name)
	e.p("}\n")

	e.p("func genEncode%s(v %s) (json.RawMessage, error) {", u.Name, u.Name)
	e.p("switch v := v.(type) {")
	for _, v := range u.Variants {
		switch {
		case objects:
			e.p("case *%s:\nreturn genTagged(\"\", \"\", v)", v.Decl.Name)
		case strings.HasPrefix(v.Decl.Under, "[]"):
			e.p("case %s:\nreturn json.Marshal(genNonNil(v))", v.Decl.Name)
		default:
			e.p("case %s:\nreturn json.Marshal(v)", v.Decl.Name)
		}
	}
	e.p("}")
	e.p("return nil, fmt.Errorf(\"cannot encode %%T as %s\", v)", u.Name)
	e.p("}\n")
}
