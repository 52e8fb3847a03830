package settings

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
)

// The one way a service's New defaults and validates its Config:
// FillZero(&cfg, DefaultConfig()), then Validate, its error wrapped with
// the service's name (docs/architecture.md, "Adding a channel"). A zero
// field (a nil, not an empty, slice or map) takes the default, so booleans
// default to false; one out of range is an error naming field and range,
// never replaced. A command runs the same Validate on a Config filled from
// DefaultConfig, where a zero is the operator's: refused unless in range.

// FillZero sets every exported field of *cfg that holds its type's zero
// value to the same field of def.
func FillZero[T any](cfg *T, def T) {
	v, d := reflect.ValueOf(cfg).Elem(), reflect.ValueOf(def)
	if v.Kind() != reflect.Struct {
		panic(fmt.Sprintf("settings.FillZero: %T is not a struct", *cfg))
	}
	for i := range v.NumField() {
		if f := v.Field(i); f.CanSet() && f.IsZero() {
			f.Set(d.Field(i))
		}
	}
}

// FieldError is a Config field that Validate refused: the field by its
// path in the Config (TTL, or Certs.TTL once Under has placed it), its
// value and the rule it breaks. Explain names it as the setting that
// filled the field.
type FieldError struct {
	// Field is the field's path: Go field names joined with '.', then,
	// for an entry of a map, its key (Branches.gastown).
	Field string
	// Value is the value refused; nil when the field is missing.
	Value any
	// Rule is what the field must be: "it must be above 0"; for a missing
	// field, "is required".
	Rule string
	// Other, for a rule across two fields, is the other field's path, and
	// OtherValue its value: Rule compares with it ("it must be below").
	Other      string
	OtherValue any
}

func (e *FieldError) Error() string {
	if e.Value == nil {
		return e.Field + " " + e.Rule
	}
	s := fmt.Sprintf("%s is %s: %s", e.Field, show(e.Value), e.Rule)
	if e.Other != "" {
		s += fmt.Sprintf(" %s (%s)", e.Other, show(e.OtherValue))
	}
	return s
}

// show is a value as an operator would write it: a string quoted, an
// empty list or map as empty.
func show(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	if r := reflect.ValueOf(v); (r.Kind() == reflect.Map || r.Kind() == reflect.Slice) && r.Len() == 0 {
		return "empty"
	}
	return fmt.Sprint(v)
}

// AtLeast is an error naming field unless v >= lowest.
func AtLeast[N cmp.Ordered](field string, v, lowest N) error {
	if v < lowest {
		return &FieldError{Field: field, Value: v, Rule: fmt.Sprintf("it must be at least %v", lowest)}
	}
	return nil
}

// Positive is an error naming field unless v > 0: a duration, or a count
// of at least one.
func Positive[N cmp.Ordered](field string, v N) error {
	var zero N
	if v <= zero {
		return &FieldError{Field: field, Value: v, Rule: "it must be above 0"}
	}
	return nil
}

// NotZero is an error naming field when v is 0, where the field's zero
// would be taken as its default but the operator means something else by
// it (a negative value means never). meaning says what the other values
// mean.
func NotZero[N cmp.Ordered](field string, v N, meaning string) error {
	var zero N
	if v == zero {
		return &FieldError{Field: field, Value: v, Rule: "it must not be 0 (" + meaning + ")"}
	}
	return nil
}

// InRange is an error naming field unless lowest <= v <= highest.
func InRange[N cmp.Ordered](field string, v, lowest, highest N) error {
	if v < lowest || v > highest {
		return &FieldError{Field: field, Value: v, Rule: fmt.Sprintf("it must be from %v to %v", lowest, highest)}
	}
	return nil
}

// Below is an error naming field unless v < ov, the value of the field
// other: two settings that only work together (a keepalive below the idle
// timeout).
func Below[N cmp.Ordered](field string, v N, other string, ov N) error {
	if v >= ov {
		return &FieldError{Field: field, Value: v, Rule: "it must be below", Other: other, OtherValue: ov}
	}
	return nil
}

// AtMost is an error naming field unless v <= ov, the value of the field
// other.
func AtMost[N cmp.Ordered](field string, v N, other string, ov N) error {
	if v > ov {
		return &FieldError{Field: field, Value: v, Rule: "it must be at most", Other: other, OtherValue: ov}
	}
	return nil
}

// Required is an error naming field when v is empty.
func Required(field, v string) error {
	if v == "" {
		return &FieldError{Field: field, Rule: "is required"}
	}
	return nil
}

// Invalid is an error naming field (an entry of a map: Field.key) whose
// value v is malformed, for the reason why.
func Invalid(field string, v any, why error) error {
	return &FieldError{Field: field, Value: v, Rule: why.Error()}
}

// Under places err, a Validate's error on a Config held in field of a
// larger Config, in that one: each FieldError's paths start with field,
// and any other error says field. nil stays nil.
func Under(field string, err error) error {
	fe, isField := err.(*FieldError)
	switch {
	case err == nil:
		return nil
	case asJoined(err) != nil:
		var out []error
		for _, e := range asJoined(err) {
			out = append(out, Under(field, e))
		}
		return errors.Join(out...)
	case isField:
		placed := *fe
		placed.Field = field + "." + fe.Field
		if fe.Other != "" {
			placed.Other = field + "." + fe.Other
		}
		return &placed
	default:
		return fmt.Errorf("%s: %w", field, err)
	}
}

// asJoined is the errors err joins (errors.Join), or nil.
func asJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return nil
}
