// Package ask is what acpterm asks the user on the terminal for an agent:
// the fields of a form (elicitation/create), each a question checked
// against its schema, and choices named by ID, name or number.
//
// Everything in a form is the agent's: every line written is sanitized,
// and what is listed or checked is bounded.
package ask

import (
	"context"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/acpterm/acpterm/acp"
	"github.com/acpterm/acpterm/cmd/acpterm/internal/render"
	"github.com/acpterm/acpterm/internal/text/textsafe"
)

// maxFormFields bounds the fields of a form acpterm asks: an agent could
// send thousands.
const maxFormFields = 50

// A Field is one property of a form's schema, asked as one question.
type Field struct {
	name     string
	required bool
	schema   acp.ElicitationPropertySchema
}

// Fields lists a form's fields, the required ones first in their
// order, then the others by name (the schema's properties are a map, so
// their order is lost). It is nil for a form acpterm cannot fill in: too
// many fields, or a required field of an unknown type.
func Fields(form *acp.ElicitationFormMode) []Field {
	if form == nil || len(form.RequestedSchema.Properties) > maxFormFields {
		return nil
	}
	props := form.RequestedSchema.Properties
	fields := []Field{}
	seen := map[string]bool{}
	for _, name := range form.RequestedSchema.Required {
		if s, ok := props[name]; ok && !seen[name] {
			seen[name] = true
			fields = append(fields, Field{name, true, s})
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range props {
			if !yield(k) {
				return
			}
		}
	}) {
		if !seen[name] {
			fields = append(fields, Field{name, false, props[name]})
		}
	}
	for _, f := range fields {
		if _, unknown := f.schema.(*acp.UnknownElicitationPropertySchema); unknown && f.required {
			return nil
		}
	}
	return fields
}

// Name is the field's name in the form's content.
func (f *Field) Name() string { return f.name }

// Ask asks for the field on out until the answer is valid, reading each
// answer with readLine (which shows prompt): nil for an optional field
// left empty, an error when the user cancelled (readLine's error, or
// ctx's).
func (f *Field) Ask(ctx context.Context, readLine func(prompt string) (string, error), out io.Writer) (acp.ElicitationContentValue, error) {
	_, _, def := describeField(f)
	_, _ = io.WriteString(out, f.head()+"\n")
	prompt := "  > "
	if def != "" {
		prompt = "  [" + textsafe.Line(render.Clip(def, 60)) + "] > "
	}
	for {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line, err := readLine(prompt)
		if err != nil {
			return nil, err
		}
		line = strings.TrimSpace(line)
		if line == "" && def != "" {
			line = def
		}
		if line == "" {
			if !f.required {
				return nil, nil
			}
			_, _ = io.WriteString(out, "  (required)\n")
			continue
		}
		v, problem := parseField(f.schema, line)
		if problem == "" {
			return v, nil
		}
		_, _ = io.WriteString(out, "  "+problem+"\n")
	}
}

// maxShownChoices is how many of a field's choices its question lists:
// an agent may send any number, and each is a line. The others are
// counted; any of them is still taken by its value or title.
const maxShownChoices = 20

// head is the question of a field: its title and name, its description
// and the first maxShownChoices of its choices, numbered.
func (f *Field) head() string {
	title, desc, _ := describeField(f)
	label := textsafe.Line(render.Clip(f.name, 60))
	if title != "" && title != f.name {
		label = textsafe.Line(render.Clip(title, 80)) + " [" + label + "]"
	}
	var b strings.Builder
	b.WriteString(label)
	if desc != "" {
		b.WriteString(": " + textsafe.Line(render.Clip(desc, 300)))
	}
	choices := fieldChoices(f.schema)
	for i, c := range choices {
		if i == maxShownChoices {
			fmt.Fprintf(&b, "\n  … and %s more (type one's value or title)", render.GroupDigits(uint64(len(choices)-i)))
			break
		}
		fmt.Fprintf(&b, "\n  %d) %s", i+1, textsafe.Line(render.Clip(c.Name, 80)))
	}
	return b.String()
}

// describeField is a field's title, description and default as text.
func describeField(f *Field) (title, desc, def string) {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	switch s := f.schema.(type) {
	case *acp.StringPropertySchema:
		return str(s.Title), str(s.Description), str(s.Default)
	case *acp.NumberPropertySchema:
		if s.Default != nil {
			def = strconv.FormatFloat(*s.Default, 'g', -1, 64)
		}
		return str(s.Title), str(s.Description), def
	case *acp.IntegerPropertySchema:
		if s.Default != nil {
			def = strconv.FormatInt(*s.Default, 10)
		}
		return str(s.Title), str(s.Description), def
	case *acp.BooleanPropertySchema:
		switch {
		case s.Default == nil:
		case *s.Default:
			def = "yes"
		default:
			def = "no"
		}
		return str(s.Title), str(s.Description) + " (yes/no)", def
	case *acp.MultiSelectPropertySchema:
		return str(s.Title), str(s.Description), strings.Join(s.Default, ",")
	}
	return "", "", ""
}

// fieldChoices are the values of an enum or multi-select field.
func fieldChoices(s acp.ElicitationPropertySchema) []Choice {
	var cs []Choice
	switch s := s.(type) {
	case *acp.StringPropertySchema:
		for _, o := range s.OneOf {
			cs = append(cs, Choice{o.Const, o.Title})
		}
		for _, v := range s.Enum {
			cs = append(cs, Choice{v, v})
		}
	case *acp.MultiSelectPropertySchema:
		switch it := s.Items.(type) {
		case *acp.StringMultiSelectItems:
			for _, v := range it.Enum {
				cs = append(cs, Choice{v, v})
			}
		case *acp.TitledMultiSelectItems:
			for _, o := range it.AnyOf {
				cs = append(cs, Choice{o.Const, o.Title})
			}
		}
	}
	for i := range cs {
		if cs[i].Name == "" {
			cs[i].Name = cs[i].ID
		}
	}
	return cs
}

// pickChoice is the choice a word names: its number in the list, its
// value, or its title.
func pickChoice(word string, cs []Choice) (string, bool) {
	if n, err := strconv.Atoi(word); err == nil && n >= 1 && n <= len(cs) {
		return cs[n-1].ID, true
	}
	return Match(word, cs)
}

// maxPattern bounds the regular expression of a string field that is
// checked; a longer one is left to the agent.
const maxPattern = 1000

// parseField turns the user's answer into the field's value, or says
// what is wrong with it.
func parseField(s acp.ElicitationPropertySchema, line string) (acp.ElicitationContentValue, string) {
	switch s := s.(type) {
	case *acp.StringPropertySchema:
		return parseString(s, line)
	case *acp.NumberPropertySchema:
		return parseNumber(s, line)
	case *acp.IntegerPropertySchema:
		return parseInteger(s, line)
	case *acp.BooleanPropertySchema:
		return parseBoolean(line)
	case *acp.MultiSelectPropertySchema:
		return parseMultiSelect(s, line)
	}
	return nil, "acpterm cannot answer a field of this type"
}

// parseString takes one of a string field's choices, when it has any,
// else a string of the field's length that matches its pattern.
func parseString(s *acp.StringPropertySchema, line string) (acp.ElicitationContentValue, string) {
	if cs := fieldChoices(s); len(cs) > 0 {
		id, ok := pickChoice(line, cs)
		if !ok {
			return nil, fmt.Sprintf("please answer 1-%d or one of the values", len(cs))
		}
		return acp.ElicitationContentString(id), ""
	}
	if outside(uint32(len([]rune(line))), s.MinLength, s.MaxLength) {
		return nil, fmt.Sprintf("the length must be %s", bounds(s.MinLength, s.MaxLength))
	}
	if s.Pattern != nil && len(*s.Pattern) <= maxPattern {
		if re, err := regexp.Compile(*s.Pattern); err == nil && !re.MatchString(line) {
			return nil, "the answer must match " + textsafe.Line(render.Clip(*s.Pattern, 100))
		}
	}
	return acp.ElicitationContentString(line), ""
}

// parseNumber takes a finite number within the field's range.
func parseNumber(s *acp.NumberPropertySchema, line string) (acp.ElicitationContentValue, string) {
	x, err := strconv.ParseFloat(line, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, "please answer a number"
	}
	if outside(x, s.Minimum, s.Maximum) {
		return nil, "the number must be " + bounds(s.Minimum, s.Maximum)
	}
	return acp.ElicitationContentNumber(x), ""
}

// parseInteger takes a whole number within the field's range.
func parseInteger(s *acp.IntegerPropertySchema, line string) (acp.ElicitationContentValue, string) {
	x, err := strconv.ParseInt(line, 10, 64)
	if err != nil {
		return nil, "please answer a whole number"
	}
	if outside(x, s.Minimum, s.Maximum) {
		return nil, "the number must be " + bounds(s.Minimum, s.Maximum)
	}
	return acp.ElicitationContentInteger(x), ""
}

// parseBoolean takes yes or no, in a few spellings.
func parseBoolean(line string) (acp.ElicitationContentValue, string) {
	switch strings.ToLower(line) {
	case "y", "yes", "true":
		return acp.ElicitationContentBoolean(true), ""
	case "n", "no", "false":
		return acp.ElicitationContentBoolean(false), ""
	}
	return nil, "please answer yes or no"
}

// parseMultiSelect takes choices separated by commas, each once, as many
// as the field allows.
func parseMultiSelect(s *acp.MultiSelectPropertySchema, line string) (acp.ElicitationContentValue, string) {
	cs := fieldChoices(s)
	var picked []string
	for _, w := range strings.Split(line, ",") {
		if w = strings.TrimSpace(w); w == "" {
			continue
		}
		id, ok := pickChoice(w, cs)
		if !ok {
			return nil, fmt.Sprintf("please answer numbers 1-%d or values, separated by commas", len(cs))
		}
		if !slices.Contains(picked, id) {
			picked = append(picked, id)
		}
	}
	if outside(uint64(len(picked)), s.MinItems, s.MaxItems) {
		return nil, "the number of choices must be " + bounds(s.MinItems, s.MaxItems)
	}
	return acp.ElicitationContentStringArray(picked), ""
}

// outside reports whether x is below lo or above hi, either of which may
// be absent.
func outside[T uint32 | uint64 | int64 | float64](x T, lo, hi *T) bool {
	return lo != nil && x < *lo || hi != nil && x > *hi
}

// bounds describes a range with either end open.
func bounds[T uint32 | uint64 | int64 | float64](lo, hi *T) string {
	f := func(x T) string { return strconv.FormatFloat(float64(x), 'g', -1, 64) }
	switch {
	case lo != nil && hi != nil:
		return "between " + f(*lo) + " and " + f(*hi)
	case lo != nil:
		return "at least " + f(*lo)
	case hi != nil:
		return "at most " + f(*hi)
	}
	return "valid"
}
